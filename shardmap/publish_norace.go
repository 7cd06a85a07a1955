//go:build !race

package shardmap

import "github.com/flashindexer/flashindexer/asm"

// initWord writes the value of a slot whose key is not set yet: readers
// ignore a slot's value unless its key matches, and the store that publishes
// the key orders this write before it. A plain store saves the locked
// exchange an atomic store costs, which would also wait for every earlier
// store to leave the store buffer.
func initWord(p *uint64, v uint64) { *p = v }

// publish writes a word readers load with sync/atomic (a key, or the value
// of a set key) as a release store: a reader that sees it sees every store
// the writer made before it. One writer at a time writes a shard (its lock,
// or Exclusive), so no read-modify-write is needed, and asm.StoreRelease
// costs no locked instruction.
func publish(p *uint64, v uint64) { asm.StoreRelease(p, v) }
