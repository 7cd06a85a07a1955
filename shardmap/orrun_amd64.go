//go:build amd64 && gc && !purego && !noasm && !race

package shardmap

import (
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/keyhash"
)

// orRun is orRunGo in assembly (orrun_amd64.s), with its stores plain
// (order.Publish's, which is one MOVQ on amd64). The race detector does
// not see assembly stores: race builds run orRunGo.
//
//go:noescape
func orRun(hot unsafe.Pointer, smask uint64, keys []keyhash.Key, mask uint64) (int, bool)

// bucketRun is bucketRunGo in assembly (orrun_amd64.s), with addrs empty
// or as long as keys.
//
//go:noescape
func bucketRun(hot unsafe.Pointer, smask uint64, keys []keyhash.Key, addrs []uintptr)

// hotShift: a shard's table pointers are 1<<hotShift bytes past the one
// before (hotPositions pointers), as the assembly steps.
const hotShift = 13

var (
	_ [hotPositions*8 - 1<<hotShift]struct{}
	_ [1<<hotShift - hotPositions*8]struct{}
)
