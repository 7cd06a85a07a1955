//go:build !race

package arena

import "github.com/flashindexer/flashindexer/asm"

// initWord writes a word of a slot that is not published: a reused slot
// (odd version), whose readers discard what they read when they validate
// the version, or a fresh one, which no reader can reach yet. The release
// store that publishes the slot (or its handle) orders this write before
// it. A plain store saves the locked exchange an atomic store costs.
func initWord(p *uint64, v uint64) { *p = v }

// publish writes a word that other goroutines load with sync/atomic, as a
// release store (asm.StoreRelease): a reader that sees it sees every store
// the writer made before it, and the writer pays no locked instruction.
func publish(p *uint64, v uint64) { asm.StoreRelease(p, v) }
