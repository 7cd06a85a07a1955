//go:build amd64 && gc && !purego && !noasm && !race

package asm

import "github.com/klauspost/cpuid/v2"

// needs lists, for each kernel in kernels_amd64.s, every CPU extension it
// uses: dispatch picks a kernel only on a CPU that has them all.
// TestKernels_NeedsCoverGenerated holds it to the generator's own list
// (each routine's "Requires:" line), so a new instruction cannot reach a
// CPU that lacks it.
var needs = map[string][]cpuid.FeatureID{
	"subsetAVX512": {cpuid.AVX, cpuid.AVX512F, cpuid.AVX512BW, cpuid.BMI2},
	"subsetAVX2":   {cpuid.AVX, cpuid.AVX2},
}

var (
	hasAVX512 = cpuid.CPU.Supports(needs["subsetAVX512"]...)
	hasAVX2   = cpuid.CPU.Supports(needs["subsetAVX2"]...)
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
