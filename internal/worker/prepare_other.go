//go:build !amd64 || !gc || purego || noasm || race

package worker

import (
	"unsafe"

	"github.com/flashindexer/flashindexer/shardmap"
)

// chainKeys is chainKeysGo where there is no assembly for it.
func chainKeys(keys []shardmap.Key, blocks []Block, prev uint64, kr shardmap.Keyer) {
	chainKeysGo(keys, blocks, prev, kr)
}

// freshLoop is freshLoopGo where there is no assembly for it.
func freshLoop(base unsafe.Pointer, zv *uint32, ns []node, keys []shardmap.Key, blocks []Block, pending []pendingBlock, pos, ni, parent uint32) {
	freshLoopGo(base, zv, ns, keys, blocks, pending, pos, ni, parent)
}

// claimRun is claimRunGo where there is no assembly for it.
func claimRun(base unsafe.Pointer, bmask uint64, blocks []Block, pending []pendingBlock, keys []shardmap.Key, chunks [][]node, pos, i int) (int, int) {
	return claimRunGo(base, bmask, blocks, pending, keys, chunks, pos, i)
}

// hashIDs is hashIDsGo where there is no assembly for it.
func hashIDs(pending []pendingBlock, blocks []Block, addrs []uintptr, kr shardmap.Keyer, base, bmask uintptr) {
	hashIDsGo(pending, blocks, addrs, kr, base, bmask)
}
