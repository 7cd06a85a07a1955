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

// claimRun is claimRunGo where there is no assembly for it.
func claimRun(base unsafe.Pointer, bmask uint64, blocks []Block, pending []pendingBlock, keys []keyhash.Key, chunks []*chunk, pos, i int) (int, int) {
	return claimRunGo(base, bmask, blocks, pending, keys, chunks, pos, i)
}
