//go:build amd64 && gc && !purego && !noasm

package asm

import "github.com/klauspost/cpuid/v2"

var (
	hasAVX512 = cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512BW, cpuid.BMI2)
	hasAVX2   = cpuid.CPU.Supports(cpuid.AVX2)
)

func init() { selectBest() }

func kernelFor(p Path) (func(a, b []uint64) bool, bool) {
	switch p {
	case PathAVX512:
		return subsetAVX512, hasAVX512
	case PathAVX2:
		return subsetAVX2, hasAVX2
	}
	return subsetGeneric, true
}
