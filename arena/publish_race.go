//go:build race

package arena

import "sync/atomic"

// initWord writes a word of an unpublished slot. Under the race detector the
// write is atomic, since a reader with a stale handle may load the word
// before it rejects the slot's version.
func initWord(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

// publish writes a word other goroutines load with sync/atomic; under the
// race detector with sync/atomic, which it sees.
func publish(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
