//go:build !race

package order

// Init writes a word no reader can use yet: a slot whose key is not set,
// or whose version says it is changing; the Publish that makes it usable
// orders this write before it. A plain store saves the locked exchange an
// atomic store costs.
func Init(p *uint64, v uint64) { *p = v }

// Race reports whether this is a race-detector build.
const Race = false
