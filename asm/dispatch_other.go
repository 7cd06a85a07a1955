//go:build !(amd64 && gc && !purego && !noasm && !race)

package asm

var hasAVX512, hasAVX2 = false, false

// detected: a build without assembly uses no CPU feature.
func detected() []string { return nil }

func init() { selectBest() }

func kernelFor(p Path) (func(a, b []uint64) bool, bool) {
	return subsetGeneric, p == PathGeneric
}
