//go:build !(amd64 && gc && !purego && !noasm)

package asm

var hasAVX512, hasAVX2 = false, false

func init() { selectBest() }

func kernelsFor(p Path) (func(a, b []uint64) int, func(a, b []uint64) bool, bool) {
	return andPopcntGeneric, subsetGeneric, p == PathGeneric
}

// Prefetch asks the CPU to bring the cache line at addr into every cache
// level; builds without assembly have no prefetch instruction, so it does
// nothing.
func Prefetch(addr uintptr) {}
