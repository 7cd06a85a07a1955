package asm

import (
	"fmt"
	"math/bits"
)

// Path is a kernel family.
type Path uint8

const (
	PathGeneric Path = iota // math/bits, always available
	PathAVX2                // AVX2 nibble lookup and VPTEST
	PathAVX512              // AVX-512 VPOPCNTQ and masked tails
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

// Crossover is the width in words from which the SIMD kernel runs; below
// it the inlined math/bits loop does. Set from BenchmarkKernels on this
// project's machines (docs/BENCHMARKS.md): 8 words (512 workers).
var Crossover = 8

var (
	path      Path
	andPopcnt func(a, b []uint64) int
	subset    func(a, b []uint64) bool
)

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
	ap, sub, ok := kernelsFor(p)
	if !ok {
		return fmt.Errorf("asm: %v kernels not supported on this CPU or build", p)
	}
	path, andPopcnt, subset = p, ap, sub
	return nil
}

// Active returns the selected kernel family.
func Active() Path { return path }

// Supported reports whether the CPU and build can run p.
func Supported(p Path) bool { _, _, ok := kernelsFor(p); return ok }

// Kernels describes the kernels in use.
func Kernels() string {
	return fmt.Sprintf("%v from %d words (generic below), race-annotated: %v", path, Crossover, raceEnabled)
}

// AndPopcnt returns popcount(a AND b) over len(a) words; b must be at least
// as long.
func AndPopcnt(a, b []uint64) int {
	if len(a) < Crossover || path == PathGeneric {
		b = b[:len(a)]
		c := 0
		for i := range a {
			c += bits.OnesCount64(a[i] & b[i])
		}
		return c
	}
	b = b[:len(a)]
	raceRead(a)
	raceRead(b)
	return andPopcnt(a, b)
}

// IsSubset reports whether every bit of a is set in b, over len(a) words; b
// must be at least as long.
func IsSubset(a, b []uint64) bool {
	if len(a) < Crossover || path == PathGeneric {
		b = b[:len(a)]
		for i := range a {
			if a[i]&^b[i] != 0 {
				return false
			}
		}
		return true
	}
	b = b[:len(a)]
	raceRead(a)
	raceRead(b)
	return subset(a, b)
}
