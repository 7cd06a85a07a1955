//go:build amd64 && gc && !purego && !noasm

package asm

import "github.com/klauspost/cpuid/v2"

var (
	hasAVX512 = cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512VPOPCNTDQ, cpuid.BMI2)
	hasAVX2   = cpuid.CPU.Supports(cpuid.AVX2, cpuid.POPCNT)
)

func init() { selectBest() }

func kernelsFor(p Path) (func(a, b []uint64) int, func(a, b []uint64) bool, bool) {
	switch p {
	case PathAVX512:
		return andPopcntAVX512, subsetAVX512, hasAVX512
	case PathAVX2:
		return andPopcntAVX2, subsetAVX2, hasAVX2
	}
	return andPopcntGeneric, subsetGeneric, true
}
