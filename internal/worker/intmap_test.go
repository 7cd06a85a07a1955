package worker

import (
	"math/rand/v2"
	"testing"
)

// newTestIntMap returns an empty map keyed from r; a degenerate one hashes
// every key to slot 0: one long cluster.
func newTestIntMap(r *rand.Rand, degenerate bool) *intMap {
	m := new(intMap)
	m.init(r.Uint64(), r.Uint64())
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
