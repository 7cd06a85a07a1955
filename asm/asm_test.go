package asm

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"unsafe"
)

var paths = []Path{PathGeneric, PathAVX2, PathAVX512}

func TestKernels_Active(t *testing.T) {
	t.Logf("kernels: %s (avx2 %v, avx512 %v)", Kernels(), Supported(PathAVX2), Supported(PathAVX512))
}

// boundary lengths: around the vector widths (4 and 8 words), their
// multiples, and the crossover.
func lengths() []int {
	ls := []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 63, 64, 65, 100, 128, 129}
	return append(ls, Crossover-1, Crossover, Crossover+1)
}

func checkAgainstTwin(t testing.TB, p Path, a, b []uint64) {
	ap, sub, ok := kernelsFor(p)
	if !ok {
		t.Skipf("%v not supported here", p)
	}
	if got, want := ap(a, b), andPopcntGeneric(a, b); got != want {
		t.Fatalf("%v and-popcount of %d words = %d, want %d", p, len(a), got, want)
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
				checkAgainstTwin(t, p, a, b) // empty a: subset, count 0
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
		if AndPopcnt(a, b) != 1 || IsSubset(a, b) || !IsSubset(b, a) {
			t.Fatalf("%v: wrong answers", p)
		}
	}
}

func TestAndPopcnt_ZeroAllocs(t *testing.T) {
	a, b := make([]uint64, 16), make([]uint64, 16)
	if n := testing.AllocsPerRun(100, func() { _ = AndPopcnt(a, b); _ = IsSubset(a, b) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// BenchmarkKernels: every kernel at every width; the generic rows are the
// inlined math/bits loop the dispatch uses below the crossover.
func BenchmarkKernels(b *testing.B) {
	for _, words := range []int{1, 2, 4, 8, 16, 32, 64} {
		x, y := make([]uint64, words), make([]uint64, words)
		for i := range x {
			x[i], y[i] = 0xF0F0F0F0F0F0F0F0, 0xFFFFFFFFFFFFFFFF
		}
		for _, p := range paths {
			ap, sub, ok := kernelsFor(p)
			b.Run(fmt.Sprintf("op=andpopcnt/kernel=%v/words=%d", p, words), func(b *testing.B) {
				if !ok {
					b.Skip("unsupported")
				}
				b.ReportAllocs()
				s := 0
				for b.Loop() {
					s += ap(x, y)
				}
				_ = s
			})
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
		b.Run(fmt.Sprintf("op=andpopcnt/kernel=inline/words=%d", words), func(b *testing.B) {
			saved := Crossover
			Crossover = 1 << 30
			defer func() { Crossover = saved }()
			s := 0
			for b.Loop() {
				s += AndPopcnt(x, y)
			}
			_ = s
		})
	}
}

// A prefetch of any address, mapped or not, neither faults nor writes.
func TestPrefetch_AnyAddress(t *testing.T) {
	x := []uint64{1, 2, 3}
	for _, a := range []uintptr{0, 1, ^uintptr(0), uintptr(unsafe.Pointer(&x[1]))} {
		Prefetch(a)
	}
	if x[0] != 1 || x[1] != 2 || x[2] != 3 {
		t.Fatalf("prefetch changed memory: %v", x)
	}
}

// StoreRelease writes the word; a reader that sees a published counter sees
// the data stored before it (message passing, writer and reader at once).
func TestStoreRelease_Publishes(t *testing.T) {
	var w uint64
	StoreRelease(&w, 42)
	if atomic.LoadUint64(&w) != 42 {
		t.Fatalf("stored %d", w)
	}
	if raceEnabled {
		t.Skip("the race detector does not see assembly stores; race builds publish with sync/atomic")
	}
	var data [8]uint64 // its own line, apart from the flag
	var flag uint64
	const n = 200000
	done := make(chan error)
	go func() {
		for {
			f := atomic.LoadUint64(&flag)
			if d := atomic.LoadUint64(&data[0]); d < f {
				done <- fmt.Errorf("flag %d published before data %d", f, d)
				return
			}
			if f == n {
				done <- nil
				return
			}
		}
	}()
	for i := uint64(1); i <= n; i++ {
		data[0] = i
		StoreRelease(&flag, i)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
