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

// Batches the way a store uses the map: every key of a batch is looked up
// first (getHint), then all are inserted (putNew with the batch's hints),
// the inserts growing the map and filling each other's hinted slots; the
// map ends equal to a Go map, whose every key it finds.
func TestIntMap_PutNewWithHints(t *testing.T) {
	for _, degenerate := range []bool{false, true} {
		r := rand.New(rand.NewPCG(3, 4))
		m := newTestIntMap(r, degenerate)
		ref := map[uint64]uint32{}
		hinted := 0
		for batch := 0; batch < 300; batch++ {
			var keys []uint64
			var hints []imHint
			for range 1 + r.IntN(40) {
				k := r.Uint64() >> r.IntN(60) // small keys too, 0 among them
				if _, ok := ref[k]; ok || slices.Contains(keys, k) {
					continue
				}
				_, ok, h := m.getHint(k)
				if ok {
					t.Fatalf("getHint(%d) finds a key never put", k)
				}
				keys, hints = append(keys, k), append(hints, h)
			}
			for i, k := range keys {
				before := m.cap()
				if hints[i].tag != 0 && int(hints[i].cap) == before && m.ctrl[hints[i].slot] == 0 {
					hinted++
				}
				m.putNew(k, uint32(batch), hints[i])
				ref[k] = uint32(batch)
			}
			if r.IntN(4) == 0 {
				for k := range ref { // deletes between batches invalidate nothing: hints are per batch
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
				if got, ok := m.get(k); ok != in || got != want {
					t.Fatalf("batch %d (degenerate=%v): get(%d) = %d %v, want %d %v", batch, degenerate, k, got, ok, want, in)
				}
			}
		}
		if hinted == 0 {
			t.Fatal("no insert took its hinted slot")
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

// Hints taken before a batch's inserts do not carry the map past 3/4 load:
// once full, putNew grows it as put does, so a probe always ends on an
// empty slot.
func TestIntMap_PutNewKeepsLoad(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	m := newTestIntMap(r, false)
	// One key hinted to each slot of the empty first table: every hint
	// stays valid until the load check says no.
	var keys []uint64
	var hints []imHint
	taken := map[uint32]bool{}
	for len(keys) < m.cap() {
		k := r.Uint64() | 1
		if _, _, h := m.getHint(k); !taken[h.slot] {
			taken[h.slot] = true
			keys, hints = append(keys, k), append(hints, h)
		}
	}
	for i, k := range keys {
		m.putNew(k, uint32(i), hints[i])
		if m.len()*4 > m.cap()*3 {
			t.Fatalf("after %d inserts: %d keys in %d slots", i+1, m.len(), m.cap())
		}
	}
	for i, k := range keys {
		if v, ok := m.get(k); !ok || v != uint32(i) {
			t.Fatalf("get(%#x) = %d %v, want %d", k, v, ok, i)
		}
	}
}
