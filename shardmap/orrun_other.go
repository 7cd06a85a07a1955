//go:build !amd64 || !gc || purego || noasm || race

package shardmap

import (
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/keyhash"
)

// orRun is orRunGo where there is no assembly for it, and under the race
// detector, which sees its stores only through sync/atomic (order.Publish).
func orRun(hot unsafe.Pointer, smask uint64, keys []keyhash.Key, mask, unless, want, lmask, lbits, lend uint64) (int, *uint64) {
	return orRunGo(hot, smask, keys, mask, unless, want, lmask, lbits, lend)
}
