//go:build amd64 && gc && !purego && !noasm && !race

package shardmap

import (
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/keyhash"
)

// orRun is orRunGo in assembly (orrun_amd64.s), with its stores plain
// MOVQs (x86-64 makes a core's stores visible in program order, so each
// is a release store, as order.Publish's). Race builds run orRunGo.
//
//go:noescape
func orRun(hot unsafe.Pointer, smask uint64, keys []keyhash.Key, mask, unless, want, lmask, lbits, lend uint64) (int, *uint64)

// hotShift: a shard's table pointers are 1<<hotShift bytes past the one
// before (hotPositions pointers), as the assembly steps.
const hotShift = 13

var (
	_ [hotPositions*8 - 1<<hotShift]struct{}
	_ [1<<hotShift - hotPositions*8]struct{}
)
