package worker

import (
	"math/rand/v2"
	"testing"
)

// newTestContentMap returns an empty map keyed from r; a degenerate one
// hashes every key to slot 0: one long cluster.
func newTestContentMap(r *rand.Rand, degenerate bool) *contentMap {
	m := new(contentMap)
	m.init(r.Uint64(), r.Uint64())
	if degenerate {
		m.k1 = 0
	}
	return m
}

type content struct {
	pos uint32
	seq uint64
}

func TestContentMap_RandomOps(t *testing.T) {
	for _, degenerate := range []bool{false, true} {
		r := rand.New(rand.NewPCG(1, 2))
		m := newTestContentMap(r, degenerate)
		ref := map[content]uint32{}
		for step := 0; step < 30000; step++ {
			k := content{uint32(r.IntN(4)), uint64(r.IntN(300))}
			switch r.IntN(5) {
			case 0:
				k.seq = r.Uint64()
			case 1:
				// Two contents one XOR apart: their mixed hashes are equal.
				k = content{0, mix(uint32(1+r.IntN(3)), uint64(r.IntN(300)))}
			}
			switch r.IntN(3) {
			case 0, 1:
				v := r.Uint32()
				m.put(k.pos, k.seq, v)
				ref[k] = v
			case 2:
				m.del(k.pos, k.seq)
				delete(ref, k)
			}
			if step%97 == 0 {
				m.each(func(pos uint32, seq uint64, v uint32) {
					if rv, ok := ref[content{pos, seq}]; !ok || rv != v {
						t.Fatalf("each: (%d, %d)=%d, want %d %v", pos, seq, v, rv, ok)
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
				if v, ok := m.get(rk.pos, rk.seq); !ok || v != rv {
					t.Fatalf("step %d (degenerate=%v): get(%v) = %d %v, want %d", step, degenerate, rk, v, ok, rv)
				}
				break
			}
			if _, ok := m.get(k.pos, k.seq); ok != (func() bool { _, ok := ref[k]; return ok })() {
				t.Fatalf("step %d: presence of %v", step, k)
			}
		}
	}
}

// Contents whose mixed hashes are equal are two keys: (0, mix(p, s)) and
// (p, s) for p > 0. The map once kept one value for both.
func TestContentMap_MixedCollisionsStayApart(t *testing.T) {
	var m contentMap
	m.init(3, 5)
	for p := uint32(1); p < 40; p++ {
		s := uint64(p) * 77
		m.put(p, s, p)
		m.put(0, mix(p, s), 1000+p)
	}
	for p := uint32(1); p < 40; p++ {
		s := uint64(p) * 77
		if v, ok := m.get(p, s); !ok || v != p {
			t.Fatalf("(%d, %d) = %d %v, want %d", p, s, v, ok, p)
		}
		if v, ok := m.get(0, mix(p, s)); !ok || v != 1000+p {
			t.Fatalf("(0, mix) = %d %v, want %d", v, ok, 1000+p)
		}
		m.del(0, mix(p, s))
		if _, ok := m.get(p, s); !ok {
			t.Fatalf("(%d, %d) went with its colliding content", p, s)
		}
	}
}
