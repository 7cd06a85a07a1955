//go:build race

package shardmap

import "sync/atomic"

// initWord writes the value of a slot whose key is not set yet. Under the
// race detector the write is atomic: readers load a bucket's values before
// they compare its keys, so one may load this word while it is written.
func initWord(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

// publish writes a word readers load with sync/atomic; under the race
// detector with sync/atomic, which it sees.
func publish(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
