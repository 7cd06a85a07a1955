package asm

import "fmt"

// Path is a kernel family.
type Path uint8

const (
	PathGeneric Path = iota // a Go loop, always available
	PathAVX2                // AVX2 VPTEST, 4 words a step
	PathAVX512              // AVX-512 VPTESTMQ, 8 words a step, masked tails
)

func (p Path) String() string {
	switch p {
	case PathAVX2:
		return "avx2"
	case PathAVX512:
		return "avx512"
	}
	return "generic"
}

// Crossover is the width in words from which the subset kernel is worth
// its call: bitset.BenchmarkCheckpoint (docs/BENCHMARKS.md) has the
// kernel-first checkpoint even with the scalar loop at 8 words and ahead
// from 16 (1,024 workers) when every active worker passes.
var Crossover = 16

var (
	path   Path
	subset func(a, b []uint64) bool
)

// UseKernel reports whether sets of the given width in words go to the
// SIMD kernel: the one place the width decides (bitset and the flash index
// ask it).
func UseKernel(words int) bool { return path != PathGeneric && words >= Crossover }

func selectBest() {
	switch {
	case hasAVX512:
		_ = SetPath(PathAVX512)
	case hasAVX2:
		_ = SetPath(PathAVX2)
	default:
		_ = SetPath(PathGeneric)
	}
}

// SetPath selects a kernel family, for tests and benchmarks. It returns an
// error and changes nothing when the CPU cannot run it. Not safe to call
// while kernels run on other goroutines.
func SetPath(p Path) error {
	sub, ok := kernelFor(p)
	if !ok {
		return fmt.Errorf("asm: %v kernels not supported on this CPU or build", p)
	}
	path, subset = p, sub
	return nil
}

// Active returns the selected kernel family.
func Active() Path { return path }

// Supported reports whether the CPU and build can run p.
func Supported(p Path) bool { _, ok := kernelFor(p); return ok }

// Detected lists the CPU features the kernels can use that this CPU has
// (avx2, avx512f, avx512bw, bmi2); none in a build without assembly
// (purego, noasm, or not amd64).
func Detected() []string { return detected() }

// Kernels describes the kernels in use.
func Kernels() string {
	return fmt.Sprintf("%v from %d words (generic below)", path, Crossover)
}

// IsSubset reports whether every bit of a is set in b, over len(a) words; b
// must be at least as long.
func IsSubset(a, b []uint64) bool {
	if !UseKernel(len(a)) {
		b = b[:len(a)]
		for i := range a {
			if a[i]&^b[i] != 0 {
				return false
			}
		}
		return true
	}
	return subset(a, b[:len(a)])
}
