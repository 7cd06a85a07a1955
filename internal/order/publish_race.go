//go:build race

package order

import "sync/atomic"

// Init writes a word no reader can use yet. Under the race detector the
// write is atomic: a reader may load the word (and then discard it) while
// it is written.
func Init(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

// Publish writes a word other goroutines load with sync/atomic; under the
// race detector with sync/atomic, which it sees.
func Publish(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

// Race reports whether this is a race-detector build.
const Race = true
