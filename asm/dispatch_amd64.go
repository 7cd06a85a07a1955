//go:build amd64 && gc && !purego && !noasm

package asm

import "github.com/klauspost/cpuid/v2"

var (
	hasAVX512 = cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512BW, cpuid.BMI2)
	hasAVX2   = cpuid.CPU.Supports(cpuid.AVX2)
)

// detected lists the CPU features the kernels can use that this CPU has.
func detected() []string {
	var out []string
	for _, f := range []struct {
		id   cpuid.FeatureID
		name string
	}{{cpuid.AVX2, "avx2"}, {cpuid.AVX512F, "avx512f"}, {cpuid.AVX512BW, "avx512bw"}, {cpuid.BMI2, "bmi2"}} {
		if cpuid.CPU.Supports(f.id) {
			out = append(out, f.name)
		}
	}
	return out
}

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
