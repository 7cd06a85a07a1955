package asm

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

var paths = []Path{PathGeneric, PathAVX2, PathAVX512}

// The selection picks the best family the CPU and build support (AVX-512
// over AVX2 over generic), and Kernels names it.
func TestKernels_Active(t *testing.T) {
	defer selectBest()
	want := PathGeneric
	switch {
	case Supported(PathAVX512):
		want = PathAVX512
	case Supported(PathAVX2):
		want = PathAVX2
	}
	for _, p := range paths {
		if Supported(p) {
			_ = SetPath(p) // whatever a test selected before
			selectBest()
			if got := Active(); got != want {
				t.Fatalf("after %v, the selection picks %v, want %v (%s)", p, got, want, Kernels())
			}
		}
	}
	if !strings.HasPrefix(Kernels(), want.String()+" ") {
		t.Fatalf("Kernels() = %q, want it to name %v", Kernels(), want)
	}
	t.Logf("kernels: %s", Kernels())
}

// boundary lengths: around the vector widths (4 and 8 words), their
// multiples, and the crossover.
func lengths() []int {
	ls := []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 63, 64, 65, 100, 128, 129}
	return append(ls, Crossover-1, Crossover, Crossover+1)
}

func checkAgainstTwin(t testing.TB, p Path, a, b []uint64) {
	sub, ok := kernelFor(p)
	if !ok {
		t.Skipf("%v not supported here", p)
	}
	if got, want := sub(a, b), subsetGeneric(a, b); got != want {
		t.Fatalf("%v subset of %d words = %v, want %v", p, len(a), got, want)
	}
}

func TestKernels_EqualTwinOnBoundaryLengths(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, p := range paths {
		t.Run(p.String(), func(t *testing.T) {
			if !Supported(p) {
				t.Skipf("%v not supported here", p)
			}
			for _, n := range lengths() {
				// b has slack words after len(a): kernels must not read them
				// into the result.
				a, b := make([]uint64, n), make([]uint64, n+9)
				for i := range b {
					b[i] = ^uint64(0)
				}
				checkAgainstTwin(t, p, a, b) // empty a: a subset
				for i := range a {
					a[i] = r.Uint64()
					b[i] = r.Uint64()
				}
				checkAgainstTwin(t, p, a, b)
				copy(b, a)
				checkAgainstTwin(t, p, a, b) // a ⊆ b
				for i := 0; i < n; i++ {     // one stray bit at every word
					b[i] &^= 1 << (i % 64)
					if a[i]&(1<<(i%64)) != 0 {
						checkAgainstTwin(t, p, a, b)
					}
					b[i] |= a[i]
				}
			}
		})
	}
}

func FuzzKernels(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}, uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, shift uint8) {
		n := len(data) / 2
		a, b := make([]uint64, n), make([]uint64, n)
		for i := 0; i < n; i++ {
			a[i] = uint64(data[i]) * 0x0101010101010101 >> (shift % 64)
			b[i] = uint64(data[n+i]) * 0x0102040810204080
			if data[i]%3 == 0 {
				b[i] |= a[i]
			}
		}
		for _, p := range paths {
			if Supported(p) {
				checkAgainstTwin(t, p, a, b)
			}
		}
	})
}

func TestDispatch_ForcedPaths(t *testing.T) {
	defer selectBest()
	for _, p := range paths {
		if err := SetPath(p); err != nil {
			if Supported(p) {
				t.Fatal(err)
			}
			continue
		}
		if Active() != p {
			t.Fatalf("Active = %v after SetPath(%v)", Active(), p)
		}
		a, b := make([]uint64, 20), make([]uint64, 20)
		a[19], b[19] = 3, 1
		if IsSubset(a, b) || !IsSubset(b, a) {
			t.Fatalf("%v: wrong answers", p)
		}
	}
}

func TestIsSubset_ZeroAllocs(t *testing.T) {
	a, b := make([]uint64, 16), make([]uint64, 16)
	if n := testing.AllocsPerRun(100, func() { _ = IsSubset(a, b) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// BenchmarkKernels: the subset kernel of every family at every width; the
// generic rows are its Go twin called through the dispatch's function value,
// the inline rows the loop IsSubset runs below the crossover.
func BenchmarkKernels(b *testing.B) {
	for _, words := range []int{1, 2, 4, 8, 16, 32, 64} {
		x, y := make([]uint64, words), make([]uint64, words)
		for i := range x {
			x[i], y[i] = 0xF0F0F0F0F0F0F0F0, 0xFFFFFFFFFFFFFFFF
		}
		for _, p := range paths {
			sub, ok := kernelFor(p)
			b.Run(fmt.Sprintf("op=subset/kernel=%v/words=%d", p, words), func(b *testing.B) {
				if !ok {
					b.Skip("unsupported")
				}
				b.ReportAllocs()
				s := 0
				for b.Loop() {
					if sub(x, y) {
						s++
					}
				}
				_ = s
			})
		}
		b.Run(fmt.Sprintf("op=subset/kernel=inline/words=%d", words), func(b *testing.B) {
			saved := Crossover
			Crossover = 1 << 30
			defer func() { Crossover = saved }()
			s := 0
			for b.Loop() {
				if IsSubset(x, y) {
					s++
				}
			}
			_ = s
		})
	}
}

// The width decides in UseKernel alone: never on the generic path, from the
// crossover on otherwise; IsSubset answers alike either side of it.
func TestUseKernel(t *testing.T) {
	defer selectBest()
	for _, p := range paths {
		if SetPath(p) != nil {
			continue
		}
		for _, w := range []int{0, 1, Crossover - 1, Crossover, Crossover + 1, 4 * Crossover} {
			if got, want := UseKernel(w), p != PathGeneric && w >= Crossover; got != want {
				t.Fatalf("%v: UseKernel(%d) = %v, want %v", p, w, got, want)
			}
			a, b := make([]uint64, w), make([]uint64, w)
			if w > 0 {
				a[w-1], b[w-1] = 6, 7
			}
			if !IsSubset(a, b) || (w > 0 && IsSubset(b, a)) {
				t.Fatalf("%v, %d words: wrong subset answers", p, w)
			}
		}
	}
}
