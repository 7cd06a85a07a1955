//go:build !race

package arena

// initWord writes a word of a slot that is not published (odd version):
// readers that look at it now discard what they read when they validate the
// version, and the atomic store that publishes the slot orders this write
// before it. A plain store saves the locked exchange an atomic store costs.
func initWord(p *uint64, v uint64) { *p = v }
