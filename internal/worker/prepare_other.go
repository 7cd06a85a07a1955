//go:build !amd64 || !gc || purego || noasm || race

package worker

import "github.com/flashindexer/flashindexer/shardmap"

// chainKeys is chainKeysGo where there is no assembly for it.
func chainKeys(keys []shardmap.Key, blocks []Block, prev uint64, kr shardmap.Keyer) {
	chainKeysGo(keys, blocks, prev, kr)
}

// hashIDs is hashIDsGo where there is no assembly for it.
func hashIDs(pending []pendingBlock, blocks []Block, addrs []uintptr, kr shardmap.Keyer, base, bmask uintptr) {
	hashIDsGo(pending, blocks, addrs, kr, base, bmask)
}
