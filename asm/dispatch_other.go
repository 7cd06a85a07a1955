//go:build !(amd64 && gc && !purego && !noasm)

package asm

var hasAVX512, hasAVX2 = false, false

func init() { selectBest() }

func kernelsFor(p Path) (func(a, b []uint64) int, func(a, b []uint64) bool, bool) {
	return andPopcntGeneric, subsetGeneric, p == PathGeneric
}
