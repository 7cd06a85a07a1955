package order

import (
	"math/rand/v2"
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

// StoreRelease, Publish and Init write all 64 bits of the word they are
// given, and nothing beside it. (Their ordering is the instruction's: a
// plain store on amd64, whose stores are release stores; atomic stores
// elsewhere and under -race. No test on a total-store-order machine could
// tell a release store from a plain one.)
func TestStores_WriteTheWord(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for name, store := range map[string]func(*uint64, uint64){"StoreRelease": StoreRelease, "Publish": Publish, "Init": Init} {
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
		StoreRelease(&w, 1)
		Publish(&w, 2)
		Init(&w, 3)
		Prefetch(uintptr(unsafe.Pointer(&w)))
		PrefetchLines(uintptr(unsafe.Pointer(&w)), 8)
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
