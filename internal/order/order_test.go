package order

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"unsafe"
)

// A prefetch of any address, mapped or not, neither faults nor writes.
func TestPrefetch_AnyAddress(t *testing.T) {
	x := []uint64{1, 2, 3}
	addrs := []uintptr{0, 1, ^uintptr(0), uintptr(unsafe.Pointer(&x[1]))}
	for _, a := range addrs {
		Prefetch(a)
	}
	for _, a := range addrs {
		for _, n := range []uintptr{0, 1, 8, 63, 64, 65, 200} {
			PrefetchLines(a, n)
		}
	}
	PrefetchLines(^uintptr(0)-100, 100) // the last lines of the address space
	if x[0] != 1 || x[1] != 2 || x[2] != 3 {
		t.Fatalf("prefetch changed memory: %v", x)
	}
}

// Publish and Init write all 64 bits of the word they are given, and
// nothing beside it.
func TestStores_WriteTheWord(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for name, store := range map[string]func(*uint64, uint64){"Publish": Publish, "Init": Init} {
		var w [3]uint64
		for _, v := range []uint64{0, 1, 1 << 63, ^uint64(0), r.Uint64(), r.Uint64()} {
			w = [3]uint64{0x5555, 0x5555, 0x5555}
			store(&w[1], v)
			if w != [3]uint64{0x5555, v, 0x5555} || atomic.LoadUint64(&w[1]) != v {
				t.Fatalf("%s(%#x) left %#x", name, v, w)
			}
		}
	}
}

// Nothing here allocates.
func TestStores_ZeroAllocs(t *testing.T) {
	var w uint64
	if n := testing.AllocsPerRun(100, func() {
		Publish(&w, 2)
		Init(&w, 3)
		Prefetch(uintptr(unsafe.Pointer(&w)))
		PrefetchLines(uintptr(unsafe.Pointer(&w)), 8)
		PrefetchAll([]uintptr{uintptr(unsafe.Pointer(&w)), 0})
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// FuzzPrefetch holds Prefetch, PrefetchLines and PrefetchAll (PREFETCHT0
// in assembly on amd64) to their twins, which do nothing: at any address,
// mapped or not, over any length, they neither fault nor change memory.
func FuzzPrefetch(f *testing.F) {
	x := make([]uint64, 64)
	for i := range x {
		x[i] = uint64(i) * 0x9E3779B97F4A7C15
	}
	want := slices.Clone(x)
	base := uintptr(unsafe.Pointer(&x[0]))
	f.Add(uint64(0), uint64(0), false)
	f.Add(uint64(8), uint64(200), true)
	f.Add(^uint64(0), uint64(100), false)
	f.Fuzz(func(t *testing.T, addr, n uint64, inside bool) {
		a := uintptr(addr)
		if inside { // an address in x, the lines from it up to 8 KiB
			a, n = base+uintptr(addr%512), n%8192
		} else {
			n %= 1 << 20
		}
		Prefetch(a)
		PrefetchLines(a, uintptr(n))
		PrefetchAll([]uintptr{a, 0, a + uintptr(n), base})
		if !slices.Equal(x, want) {
			t.Fatalf("Prefetch(%#x), PrefetchLines(%#x, %d), PrefetchAll changed memory", a, a, n)
		}
	})
}
