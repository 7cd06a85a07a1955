package bitset_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/flashindexer/flashindexer/bitset"
)

// ref is the plain reference: a set of ints.
type ref map[int]bool

func (r ref) words(n int) []uint64 {
	w := make([]uint64, bitset.Words(n))
	for i := range r {
		w[i/64] |= 1 << (i % 64)
	}
	return w
}

func checkOps(t testing.TB, a, b ref, width int) {
	wa, wb := a.words(width), b.words(width)
	and, andNot := 0, 0
	subset := true
	for i := range a {
		if b[i] {
			and++
		} else {
			andNot++
			subset = false
		}
	}
	dst := make([]uint64, len(wa))
	if got := bitset.AndInto(dst, wa, wb); got != and || bitset.Count(dst) != and {
		t.Fatalf("AndInto = %d (count %d), want %d", got, bitset.Count(dst), and)
	}
	for i := range width {
		if bitset.Test(dst, i) != (a[i] && b[i]) {
			t.Fatalf("AndInto bit %d", i)
		}
	}
	if got := bitset.AndNotInto(dst, wa, wb); got != andNot {
		t.Fatalf("AndNotInto = %d, want %d", got, andNot)
	}
	if got := bitset.IsSubset(wa, wb); got != subset {
		t.Fatalf("IsSubset = %v, want %v", got, subset)
	}
	if got := bitset.Count(wa); got != len(a) {
		t.Fatalf("Count = %d, want %d", got, len(a))
	}
	// Iteration visits exactly the members, in order.
	n, prev := 0, -1
	for i := bitset.Next(wa, 0); i >= 0; i = bitset.Next(wa, i+1) {
		if !a[i] || i <= prev {
			t.Fatalf("Next visited %d", i)
		}
		prev = i
		n++
	}
	if n != len(a) {
		t.Fatalf("Next visited %d bits, want %d", n, len(a))
	}
}

func TestBitset_RandomOps(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, width := range []int{1, 63, 64, 65, 128, 200, 1024, 1100} {
		a, b := ref{}, ref{}
		wa := make([]uint64, bitset.Words(width))
		for step := 0; step < 2000; step++ {
			i := r.IntN(width)
			switch r.IntN(4) {
			case 0:
				bitset.AtomicSet(wa, i)
				a[i] = true
			case 1:
				zero := bitset.AtomicClear(wa, i)
				delete(a, i)
				if zero != (wa[i/64] == 0) {
					t.Fatalf("AtomicClear reported zero=%v, word %x", zero, wa[i/64])
				}
			case 2:
				b[i] = true
			case 3:
				delete(b, i)
			}
			for j := range width {
				if bitset.AtomicTest(wa, j) != a[j] {
					t.Fatalf("width %d step %d: bit %d", width, step, j)
				}
			}
			if bitset.IsZero(wa) != (len(a) == 0) {
				t.Fatal("IsZero")
			}
			if step%50 == 0 {
				checkOps(t, a, b, width)
			}
		}
		checkOps(t, a, a, width)
		checkOps(t, ref{}, b, width)
	}
}

func FuzzBitset(f *testing.F) {
	f.Add([]byte{1, 2, 3, 200, 0, 64, 63}, uint16(130))
	f.Fuzz(func(t *testing.T, ops []byte, w uint16) {
		width := int(w%2048) + 1
		a, b := ref{}, ref{}
		for k := 0; k+1 < len(ops); k += 2 {
			i := (int(ops[k+1]) * 131) % width
			switch ops[k] % 4 {
			case 0:
				a[i] = true
			case 1:
				delete(a, i)
			case 2:
				b[i] = true
			case 3:
				delete(b, i)
			}
		}
		checkOps(t, a, b, width)
	})
}

func TestBitset_ConcurrentSetClear(t *testing.T) {
	const width, goroutines, rounds = 256, 8, 2000
	w := make([]uint64, bitset.Words(width))
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each goroutine owns the bits i with i%goroutines == g, in words
			// shared with every other goroutine.
			for r := range rounds {
				for i := g; i < width; i += goroutines {
					if (i/goroutines+r)%2 == 0 {
						bitset.AtomicSet(w, i)
					} else {
						bitset.AtomicClear(w, i)
					}
				}
			}
		}()
	}
	// Readers run meanwhile.
	stop := make(chan struct{})
	var rg sync.WaitGroup
	rg.Add(1)
	go func() {
		defer rg.Done()
		scratch := make([]uint64, len(w))
		for {
			select {
			case <-stop:
				return
			default:
			}
			all := []uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
			if c := bitset.AndInto(scratch, all, w); c < 0 || c > width {
				panic("impossible count")
			}
			_ = bitset.IsSubset(all, w)
			bitset.Load(scratch, w)
		}
	}()
	wg.Wait()
	close(stop)
	rg.Wait()
	// Last round r = rounds-1 (odd): bit i set iff (i/goroutines + 1) is even.
	for i := range width {
		want := (i/goroutines+rounds-1)%2 == 0
		if bitset.AtomicTest(w, i) != want {
			t.Fatalf("bit %d = %v, want %v", i, !want, want)
		}
	}
}

func TestBitset_ZeroAllocs(t *testing.T) {
	a, b, d := make([]uint64, 16), make([]uint64, 16), make([]uint64, 16)
	if n := testing.AllocsPerRun(100, func() {
		bitset.AtomicSet(b, 5)
		bitset.AtomicClear(b, 5)
		_ = bitset.AndInto(d, a, b)
		_ = bitset.IsSubset(a, b)
		_ = bitset.Next(a, 0)
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func TestSlots_LowestFirst(t *testing.T) {
	s := bitset.NewSlots(130)
	for i := range 130 {
		if got, ok := s.Alloc(); !ok || got != i {
			t.Fatalf("Alloc = %d %v, want %d", got, ok, i)
		}
	}
	if _, ok := s.Alloc(); ok {
		t.Fatal("Alloc past max")
	}
	s.Free(70)
	s.Free(3)
	s.Free(3)
	if s.Used() != 128 {
		t.Fatalf("Used = %d", s.Used())
	}
	if got, _ := s.Alloc(); got != 3 {
		t.Fatalf("Alloc = %d, want 3", got)
	}
	if got, _ := s.Alloc(); got != 70 {
		t.Fatalf("Alloc = %d, want 70", got)
	}
}

// BenchmarkCheckpoint is a jump checkpoint at every width from 64 to 4,096
// workers: given the active set (mask, its count known) and an entry's
// shared set, find the active workers that hold the entry (out) and their
// count. Two ways: the scalar AND-into-and-count loop; the subset test
// first (all pass: copy the mask, else the loop). case=pass has every
// active worker holding the entry, case=fail one worker missing in the
// middle word.
func BenchmarkCheckpoint(b *testing.B) {
	for _, words := range []int{1, 2, 4, 8, 16, 32, 64} {
		for _, fail := range []bool{false, true} {
			mask, shared, out := make([]uint64, words), make([]uint64, words), make([]uint64, words)
			for i := range mask {
				mask[i], shared[i] = 0x5555_5555_5555_5555, 0x7777_7777_7777_7777
			}
			cnt := bitset.Count(mask)
			if fail {
				shared[words/2] &^= 1
			}
			name := map[bool]string{false: "pass", true: "fail"}[fail]
			run := func(path string, f func() int) {
				b.Run(fmt.Sprintf("words=%d/case=%s/path=%s", words, name, path), func(b *testing.B) {
					b.ReportAllocs()
					s := 0
					for b.Loop() {
						s += f()
					}
					want := b.N * cnt
					if fail {
						want -= b.N
					}
					if s != want {
						b.Fatalf("counted %d, want %d", s, want)
					}
				})
			}
			run("scalar", func() int { return bitset.AndInto(out, mask, shared) })
			run("subset", func() int {
				if bitset.IsSubset(mask, shared) {
					copy(out, mask)
					return cnt
				}
				return bitset.AndInto(out, mask, shared)
			})
		}
	}
}
