//go:build !race

package order

// Init writes a word no reader can use yet: a slot whose key is not set,
// or whose version says it is changing; the Publish that makes it usable
// orders this write before it. A plain store saves the locked exchange an
// atomic store costs.
func Init(p *uint64, v uint64) { *p = v }

// Publish writes a word other goroutines load with sync/atomic, as a
// release store (StoreRelease): a reader that sees it sees every store the
// writer made before it, and the writer pays no locked instruction. One
// writer at a time may write a word this way.
func Publish(p *uint64, v uint64) { StoreRelease(p, v) }

// Race reports whether this is a race-detector build.
const Race = false
