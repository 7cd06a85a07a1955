package flash

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// newTestIntMap returns an empty map keyed from r; a degenerate one hashes
// every key to slot 0: one long cluster.
func newTestIntMap(r *rand.Rand, degenerate bool) *intMap {
	m := new(intMap)
	m.init(r.Uint64(), r.Uint64(), 0)
	if degenerate {
		m.k1 = 0
	}
	return m
}

func TestIntMap_RandomOps(t *testing.T) {
	for _, degenerate := range []bool{false, true} {
		r := rand.New(rand.NewPCG(1, 2))
		m := newTestIntMap(r, degenerate)
		ref := map[uint64]uint32{}
		for step := 0; step < 30000; step++ {
			k := uint64(r.IntN(300))
			if r.IntN(5) == 0 {
				k = r.Uint64()
			}
			switch r.IntN(3) {
			case 0, 1:
				v := r.Uint32()
				m.put(k, v)
				ref[k] = v
			case 2:
				m.del(k)
				delete(ref, k)
			}
			if step%97 == 0 {
				m.each(func(k uint64, v uint32) {
					if ref[k] != v {
						t.Fatalf("each: %d=%d, want %d", k, v, ref[k])
					}
				})
				if step%10000 == 0 {
					m.reset()
					clear(ref)
				}
			}
			if m.len() != len(ref) {
				t.Fatalf("step %d: len %d, want %d", step, m.len(), len(ref))
			}
			for rk, rv := range ref {
				if v, ok := m.get(rk); !ok || v != rv {
					t.Fatalf("step %d (degenerate=%v): get(%d) = %d %v, want %d", step, degenerate, rk, v, ok, rv)
				}
				break
			}
			if _, ok := m.get(k); ok != (func() bool { _, ok := ref[k]; return ok })() {
				t.Fatalf("step %d: presence of %d", step, k)
			}
		}
	}
}

// Batches the way a store uses the map: room for the batch is reserved,
// every key is claimed (found, or inserted with a mark), some batches are
// given back (as a rejected batch is), the others' slots are set through
// the slots claim returned; the map ends equal to a Go map, whose every key
// it finds, and never passes 3/4 load.
func TestIntMap_ClaimBatches(t *testing.T) {
	for _, degenerate := range []bool{false, true} {
		r := rand.New(rand.NewPCG(3, 4))
		m := newTestIntMap(r, degenerate)
		ref := map[uint64]uint32{}
		for batch := 0; batch < 300; batch++ {
			n := 1 + r.IntN(40)
			m.reserve(n)
			capBefore := m.cap()
			var keys []uint64
			var slots []int
			for range n {
				k := r.Uint64() >> r.IntN(60) // small keys too, 0 among them
				slot, v, found := m.claim(k, 1<<31)
				want, in := ref[k]
				if slices.Contains(keys, k) {
					if !found || v != 1<<31 {
						t.Fatalf("batch %d: a key claimed twice: %d %v", batch, v, found)
					}
					continue
				}
				if found != in || in && v != want {
					t.Fatalf("batch %d: claim(%d) = %d %v, want %d %v", batch, k, v, found, want, in)
				}
				if !found {
					keys, slots = append(keys, k), append(slots, slot)
				}
			}
			if m.cap() != capBefore || m.len()*4 > m.cap()*3 {
				t.Fatalf("batch %d: claims grew the map or passed 3/4 load: %d keys in %d slots (was %d)", batch, m.len(), m.cap(), capBefore)
			}
			if r.IntN(5) == 0 { // rejected: the claims go back
				for _, k := range keys {
					m.del(k)
				}
			} else {
				for i, k := range keys {
					m.setAt(slots[i], uint32(batch))
					ref[k] = uint32(batch)
				}
			}
			if r.IntN(4) == 0 {
				for k := range ref {
					m.del(k)
					delete(ref, k)
					break
				}
			}
			if m.len() != len(ref) {
				t.Fatalf("batch %d: len %d, want %d", batch, m.len(), len(ref))
			}
			check := keys
			if batch%30 == 29 {
				check = check[:0:0]
				for k := range ref {
					check = append(check, k)
				}
			}
			for _, k := range check {
				want, in := ref[k]
				if got, ok := m.get(k); ok != in || in && got != want {
					t.Fatalf("batch %d (degenerate=%v): get(%d) = %d %v, want %d %v", batch, degenerate, k, got, ok, want, in)
				}
			}
		}
	}
}

// A node is 24 bytes: one per (block, worker), the largest share of the
// index's memory; the links re-attachment walks are apart (8 more bytes per
// node would be a tenth of the index at 16 workers).
func TestNode_Size(t *testing.T) {
	if n := unsafe.Sizeof(node{}); n != 24 {
		t.Fatalf("node is %d bytes, want 24", n)
	}
}

// Shards per position follow the lanes: none to split for one lane, about
// one per lane for more, at most eight.
func TestShardBits(t *testing.T) {
	for lanes, want := range map[int]uint{0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 8: 3, 64: 3} {
		if got := shardBits(lanes); got != want {
			t.Errorf("shardBits(%d) = %d, want %d", lanes, got, want)
		}
	}
}

