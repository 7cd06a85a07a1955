//go:build !amd64 || !gc || purego || noasm || race

package worker

import (
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/keyhash"
)

// prepKeys is prepKeysGo where there is no assembly for it, for secrets
// that are not degenerate, as on amd64.
func prepKeys(keys []keyhash.Key, pending []pendingBlock, blocks []Block, prev uint64, root bool, idKr, seqKr keyhash.Keyer, base unsafe.Pointer, bmask uint64, prefetch bool) {
	prepKeysGo(keys, pending, blocks, prev, root, idKr, seqKr, base, bmask, prefetch)
}

// freshLoop is freshLoopGo where there is no assembly for it, for the n
// nodes from ns and the n keys, blocks and pending blocks from keys,
// blocks and pending.
func freshLoop(base unsafe.Pointer, zv *uint32, ns *node, n int, keys *keyhash.Key, blocks *Block, pending *pendingBlock, pos, ni, parent uint32) {
	freshLoopGo(base, zv, unsafe.Slice(ns, n), unsafe.Slice(keys, n), unsafe.Slice(blocks, n), unsafe.Slice(pending, n), pos, ni, parent)
}

// claimRun is claimRunGo where there is no assembly for it.
func claimRun(base unsafe.Pointer, bmask uint64, blocks []Block, pending []pendingBlock, keys []keyhash.Key, chunks [][]node, pos, i int) (int, int) {
	return claimRunGo(base, bmask, blocks, pending, keys, chunks, pos, i)
}
