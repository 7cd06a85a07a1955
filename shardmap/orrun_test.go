package shardmap

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flashindexer/flashindexer/internal/keyhash"
	"github.com/flashindexer/flashindexer/internal/order"
)

// tableState is what orRun may change in a table: its slots and counts.
type tableState struct {
	t          *table
	slots      []uint64
	used, live int
}

// hotStates copies every table of the positions from pos on, n of them.
func hotStates(m *Map, pos, n int) []tableState {
	var st []tableState
	for s := range len(m.hot) / hotPositions {
		for p := pos; p < pos+n; p++ {
			if t := m.hot[s*hotPositions+p].Load(); t != nil {
				st = append(st, tableState{t, slices.Clone(t.slots), t.used, t.live})
			}
		}
	}
	return st
}

func restore(st []tableState) {
	for _, s := range st {
		copy(s.t.slots, s.slots)
		s.t.used, s.t.live = s.used, s.live
	}
}

// orRun (the assembly on amd64) does what orRunGo does from the same
// tables: the same index and bit, the same slots and counts after. Runs
// over keys present with and without the bit, absent, deleted (value 0),
// 0, at positions with no table, into tables that fill (where both stop),
// with one shard and eight.
func TestOrRun_IsGo(t *testing.T) {
	for _, bits := range []uint{0, 3} {
		checkOrRun(t, 51, bits, 20000)
	}
}

// FuzzOrRun holds orRun (assembly on amd64) to orRunGo, its twin, over
// maps and runs drawn from the seed.
func FuzzOrRun(f *testing.F) {
	f.Add(uint64(51), uint8(0))
	f.Add(uint64(51), uint8(3))
	f.Fuzz(func(t *testing.T, seed uint64, bits uint8) { checkOrRun(t, seed, uint(bits%4), 200) })
}

func checkOrRun(t *testing.T, seed uint64, bits uint, steps int) {
	if order.Race {
		t.Skip("orRun is orRunGo in race builds")
	}
	{
		r := rand.New(rand.NewPCG(seed, uint64(bits)))
		m := New(WithShardBits(bits))
		// A list of lanes (Lanes): 8 bits each, the first ones members.
		list := func() uint64 {
			v := uint64(1) << 62
			for l := range 1 + r.IntN(6) {
				v |= uint64(1+r.IntN(10)) << (8 * l)
			}
			return v
		}
		for pos := range 1030 {
			if pos%9 != 4 {
				for k := range uint64(1 + r.IntN(30)) {
					if r.IntN(3) == 0 {
						SolePut(m, pos, k+1, list())
					} else {
						SoleOr(m, pos, k+1, 1<<r.IntN(3))
					}
				}
			}
		}
		stops, helds, added := 0, 0, 0
		for step := range steps {
			pos := []int{0, 1, 4, 5, 1000, 1020}[r.IntN(6)]
			keys := make([]keyhash.Key, r.IntN(40))
			for i := range keys {
				k := uint64(1 + r.IntN(60))
				if r.IntN(60) == 0 {
					k = 0
				}
				keys[i] = m.SoleWriter().Key(k)
			}
			mask := uint64(1) << r.IntN(4)
			// unless: the mask (a value that has it stops the run),
			// every bit (any value stops it) or the mask and a bit more.
			unless := []uint64{mask, ^uint64(0), mask | 1<<r.IntN(4)}[r.IntN(3)]
			// Lanes, in two runs of three: a member to add to lists of
			// two or six lanes, as a new list of its own (stopping at any
			// value) or as a bit (stopping at lists).
			var ln Lanes
			if r.IntN(3) > 0 {
				ln = Lanes{Want: uint64(1 + r.IntN(10)), Mask: 0xff, Bits: 8, End: []uint64{16, 48}[r.IntN(2)]}
				if r.IntN(2) == 0 {
					mask, unless = 1<<62|ln.Want, ^uint64(0)
				} else {
					unless = 3<<62 | mask
				}
			}
			n := max(min(len(keys), min(len(m.dir.Load().levels), hotPositions)-pos), 0)
			keys = keys[:n]
			before := hotStates(m, pos, n)
			gi, gh := orRunGo(m.hotFrom(pos), m.shardMask, keys, mask, unless, ln.Want, ln.Mask, ln.Bits, ln.End)
			want := hotStates(m, pos, n)
			for j := range want {
				for k, v := range want[j].slots {
					if k%2 == 1 && v != before[j].slots[k] && before[j].slots[k]>>62 == 1 {
						added++ // a list took a member
					}
				}
			}
			restore(before)
			ai, ah := orRun(m.hotFrom(pos), m.shardMask, keys, mask, unless, ln.Want, ln.Mask, ln.Bits, ln.End)
			if ai != gi || ah != gh {
				t.Fatalf("step %d: orRun at %d of %d keys = %d, %v; orRunGo %d, %v", step, pos, n, ai, ah, gi, gh)
			}
			for j, got := range hotStates(m, pos, n) {
				w := want[j]
				if got.t != w.t || !slices.Equal(got.slots, w.slots) || got.used != w.used || got.live != w.live {
					t.Fatalf("step %d: a table at %d..%d: orRun left used %d, live %d, orRunGo %d, %d (slots alike: %v)",
						step, pos, pos+n, got.used, got.live, w.used, w.live, slices.Equal(got.slots, w.slots))
				}
			}
			if ai < n {
				stops++
				if ah != nil {
					helds++
				}
			}
			// What the general path does past where both stopped: the
			// tables grow, the missing ones are made, and some keys leave.
			m.SoleWriter().OrRunHeld(pos, keys, mask, unless, ln)
			for range r.IntN(3) {
				SolePut(m, pos+r.IntN(max(n, 1)), uint64(1+r.IntN(60)), 0)
			}
			if r.IntN(2) == 0 {
				SolePut(m, pos+r.IntN(max(n, 1)), uint64(1+r.IntN(60)), list())
			}
		}
		if steps >= 20000 && (stops < 1000 || helds < 500 || added < 500) {
			t.Fatalf("%d of the runs stopped early, %d at a held bit; %d lists took a member: too few to test those paths", stops, helds, added)
		}
	}
}
