//go:build amd64 && gc && !purego && !noasm && !race

package worker

import (
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/chain"
	"github.com/flashindexer/flashindexer/internal/keyhash"
)

// prepKeys is prepKeysGo in assembly (prepare_amd64.s), with keys and
// pending as long as blocks, for secrets that are not degenerate (odd, as
// every map's are).
func prepKeys(keys []keyhash.Key, pending []pendingBlock, blocks []Block, prev uint64, root bool, idKr, seqKr keyhash.Keyer, base unsafe.Pointer, bmask uint64, prefetch bool) {
	prepKeysAsm(keys[:len(blocks)], pending[:len(blocks)], blocks, prev, root, idKr, seqKr, base, bmask, prefetch)
}

//go:noescape
func prepKeysAsm(keys []keyhash.Key, pending []pendingBlock, blocks []Block, prev uint64, root bool, idKr, seqKr keyhash.Keyer, base unsafe.Pointer, bmask uint64, prefetch bool)

// claimRun is claimRunGo in assembly (prepare_amd64.s), with pending and
// keys as long as blocks, which its caller (claimNew) slices them to. Its
// bucket tests are two SSE2 byte compares of the tags, the overflow count
// and the padding (idBucket's first 16 bytes).
//
//go:noescape
func claimRun(base unsafe.Pointer, bmask uint64, blocks []Block, pending []pendingBlock, keys []keyhash.Key, chunks []*chunk, pos, i int) (int, int)

// The chain's XXH3 constants, for the assembly (go_asm.h).
const (
	chainFlip1 = chain.Flip1
	chainFlip2 = chain.Flip2
	chainPrime = chain.Prime
)

// The assembly alone reads the chain's constants; this tells linters so.
var _ = [...]uint64{chainFlip1, chainFlip2, chainPrime}

// idBucketShift: a bucket is 1<<idBucketShift bytes, as the assembly
// steps.
const idBucketShift = 6

var (
	// The loops step the blocks, the pending blocks and the keys by one
	// index: each is 16 bytes.
	_ [unsafe.Sizeof(pendingBlock{}) - 16]struct{}
	_ [16 - unsafe.Sizeof(pendingBlock{})]struct{}
	_ [unsafe.Sizeof(Block{}) - 16]struct{}
	_ [16 - unsafe.Sizeof(Block{})]struct{}
	_ [unsafe.Sizeof(keyhash.Key{}) - 16]struct{}
	_ [16 - unsafe.Sizeof(keyhash.Key{})]struct{}
	_ [unsafe.Sizeof(idBucket{}) - 1<<idBucketShift]struct{}
	_ [1<<idBucketShift - unsafe.Sizeof(idBucket{})]struct{}
	// claimRun reads the tags, the overflow count and the padding as
	// the bucket's first 16 bytes: the count is byte idBucketSlots.
	_ [unsafe.Offsetof(idBucket{}.over) - idBucketSlots]struct{}
	_ [idBucketSlots - unsafe.Offsetof(idBucket{}.over)]struct{}
	_ [unsafe.Offsetof(idBucket{}.vals) - 16]struct{}
	_ [16 - unsafe.Offsetof(idBucket{}.vals)]struct{}
	// claimRun finds node v at chunks[v>>nodeChunkBits] plus
	// v&(1<<nodeChunkBits-1) nodes of 1<<nodeShift bytes.
	_ [unsafe.Sizeof(node{}) - 1<<nodeShift]struct{}
	_ [1<<nodeShift - unsafe.Sizeof(node{})]struct{}
)

// nodeShift: a node is 1<<nodeShift bytes, as claimRun steps.
const nodeShift = 5
