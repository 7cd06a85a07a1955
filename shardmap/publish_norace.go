//go:build !race

package shardmap

// initWord writes the value of a slot whose key is not set yet: readers
// ignore a slot's value unless its key matches, and the atomic store of the
// key orders this write before it. A plain store saves the locked exchange
// an atomic store costs, which would also wait for every earlier store to
// leave the store buffer.
func initWord(p *uint64, v uint64) { *p = v }
