//go:build race

package order

import "sync/atomic"

// Init writes a word no reader can use yet. Under the race detector the
// write is atomic: a reader may load the word (and then discard it) while
// it is written.
func Init(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

// Race reports whether this is a race-detector build.
const Race = true
