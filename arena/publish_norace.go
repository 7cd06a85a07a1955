//go:build !race

package arena

// initWord writes a word of a slot that is not published: a reused slot
// (odd version), whose readers discard what they read when they validate
// the version, or a fresh one, which no reader can reach yet. The atomic
// store that publishes the slot (or its handle) orders this write before
// it. A plain store saves the locked exchange an atomic store costs.
func initWord(p *uint64, v uint64) { *p = v }
