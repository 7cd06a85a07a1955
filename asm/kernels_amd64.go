//go:build amd64 && gc && !purego && !noasm && !race

package asm

// Generated in kernels_amd64.s by asm/_gen.

// subsetAVX512 reports whether a AND NOT b is zero over len(a) words.
// Go equivalent: subsetGeneric(a, b). Needs AVX512F, AVX512BW and BMI2.
//
//go:noescape
func subsetAVX512(a, b []uint64) bool

// subsetAVX2 reports whether a AND NOT b is zero over len(a) words.
// Go equivalent: subsetGeneric(a, b). Needs AVX2.
//
//go:noescape
func subsetAVX2(a, b []uint64) bool
