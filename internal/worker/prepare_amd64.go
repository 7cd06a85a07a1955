//go:build amd64 && gc && !purego && !noasm && !race

package worker

import (
	"unsafe"

	"github.com/flashindexer/flashindexer/shardmap"
)

// chainKeys is chainKeysGo in assembly (prepare_amd64.s): keys as long
// as blocks at least.
func chainKeys(keys []shardmap.Key, blocks []Block, prev uint64, kr shardmap.Keyer) {
	chainKeysAsm(keys[:len(blocks)], blocks, prev, kr)
}

//go:noescape
func chainKeysAsm(keys []shardmap.Key, blocks []Block, prev uint64, kr shardmap.Keyer)

// hashIDs is hashIDsGo in assembly (prepare_amd64.s): pending, and addrs
// when not empty, as long as blocks at least.
func hashIDs(pending []pendingBlock, blocks []Block, addrs []uintptr, kr shardmap.Keyer, base, bmask uintptr) {
	pending = pending[:len(blocks)]
	if len(addrs) != 0 {
		addrs = addrs[:len(blocks)]
	}
	hashIDsAsm(pending, blocks, addrs, kr, base, bmask)
}

//go:noescape
func hashIDsAsm(pending []pendingBlock, blocks []Block, addrs []uintptr, kr shardmap.Keyer, base, bmask uintptr)

// idBucketShift: a bucket is 1<<idBucketShift bytes, as the assembly
// steps.
const idBucketShift = 6

var (
	_ [unsafe.Sizeof(idBucket{}) - 1<<idBucketShift]struct{}
	_ [1<<idBucketShift - unsafe.Sizeof(idBucket{})]struct{}
)
