package entry

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/flashindexer/flashindexer/bitset"
	"github.com/flashindexer/flashindexer/internal/keyhash"
	"github.com/flashindexer/flashindexer/shardmap"
)

// wide returns a wide-form Writer of slots up to maxWorkers on a new table,
// its table's sole writer (excl) or sharing it.
func wide(maxWorkers int, excl bool) (*Writer, *shardmap.Map) {
	sets := New(maxWorkers, bitset.Words(maxWorkers))
	s := &sets
	tab := shardmap.New()
	wr := &Writer{Sets: s, Alloc: s.Arena.NewAllocator()}
	wr.Use([]*shardmap.Map{tab}, excl)
	return wr, tab
}

// members reads entry (pos, seq) with Read and returns its slots, sorted.
func members(t *testing.T, s *Sets, tab *shardmap.Map, pos int, seq uint64, words int) []int {
	t.Helper()
	out := make([]uint64, words)
	c, ok := s.Read(s.Find(tab, pos, seq), nil, out)
	if !ok {
		t.Fatalf("Read of (%d, %#x) found its slot freed with no writer running", pos, seq)
	}
	var got []int
	for i, w := range out {
		for ; w != 0; w &= w - 1 {
			got = append(got, 64*i+trailing(w))
		}
	}
	if c != len(got) {
		t.Fatalf("Read counted %d, set %d bits", c, len(got))
	}
	return got
}

func trailing(w uint64) int {
	n := 0
	for w&1 == 0 {
		w >>= 1
		n++
	}
	return n
}

// Random attaches and detaches on a few entries, against a model: every
// entry reads as the model's set, in its one shape, and Attach reports
// what the model held; sets move through every shape (low, list, handle)
// and back, and an emptied entry leaves the table.
func TestWide_AgainstModel(t *testing.T) {
	for _, excl := range []bool{true, false} {
		for _, maxWorkers := range []int{256, 1024, 4096} {
			wr, tab := wide(maxWorkers, excl)
			words := bitset.Words(maxWorkers)
			r := rand.New(rand.NewPCG(uint64(maxWorkers), 7))
			model := map[uint64]map[int]bool{}
			shapes := map[string]int{}
			for step := range 20000 {
				seq := uint64(r.IntN(6) + 1)
				if model[seq] == nil {
					model[seq] = map[int]bool{}
				}
				m := model[seq]
				// Slots from a few low ones and a few high ones, so that
				// sets cross every shape.
				w := []int{0, 5, 61, 62, 63, 64, 127, maxWorkers - 1, maxWorkers / 2}[r.IntN(9)]
				if m[w] && r.IntN(2) == 0 {
					wr.Detach(3, seq, w)
					delete(m, w)
				} else {
					if had := wr.Attach(3, seq, w); had != m[w] {
						t.Fatalf("step %d: Attach(%d) had = %v, model %v", step, w, had, m[w])
					}
					m[w] = true
				}
				e := Entry(tab.Get(3, seq))
				want := slices.Sorted(mapKeys(m))
				if got := members(t, wr.Sets, tab, 3, seq, words); !slices.Equal(got, want) {
					t.Fatalf("step %d: entry %#x reads %v, model %v", step, e, got, want)
				}
				if !wr.Sets.Canonical(e) {
					t.Fatalf("step %d: entry %#x of %v is not in its one shape", step, e, want)
				}
				if (e == 0) != (len(want) == 0) {
					t.Fatalf("step %d: entry %#x for set %v", step, e, want)
				}
				for _, w := range []int{0, 5, 62, maxWorkers - 1} {
					if wr.Sets.Holds(tab, 3, seq, w) != m[w] {
						t.Fatalf("step %d: Holds(%d) of %v", step, w, want)
					}
				}
				switch {
				case e == 0:
					shapes["none"]++
				case e.low():
					shapes["low"]++
				case e.isHandle():
					shapes["handle"]++
				default:
					shapes["list"]++
				}
			}
			if len(shapes) != 4 {
				t.Fatalf("the walk reached shapes %v, want all four", shapes)
			}
			// Every handle freed with its set: no slot is live.
			for seq, m := range model {
				for w := range m {
					wr.Detach(3, seq, w)
				}
			}
			if st := wr.Sets.Arena.Stats(); st.LiveSlots != 0 || tab.Stats().Keys != 0 {
				t.Fatalf("after every detach: %d arena slots live, %d keys", st.LiveSlots, tab.Stats().Keys)
			}
		}
	}
}

func mapKeys(m map[int]bool) func(func(int) bool) {
	return func(yield func(int) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Read with a mask keeps only the mask's members, in every shape.
func TestWide_ReadMasked(t *testing.T) {
	wr, tab := wide(1024, true)
	sets := [][]int{{3, 9}, {3, 700}, {62, 700, 1000}, {3, 9, 62, 700, 1000}}
	for i, set := range sets {
		for _, w := range set {
			wr.Attach(1, uint64(i+1), w)
		}
	}
	mask := make([]uint64, 16)
	for _, w := range []int{3, 700} {
		mask[w>>6] |= 1 << (w & 63)
	}
	for i, set := range sets {
		out := make([]uint64, 16)
		for j := range out {
			out[j] = ^uint64(0) // Read overwrites every word
		}
		c, ok := wr.Sets.Read(wr.Sets.Find(tab, 1, uint64(i+1)), mask, out)
		var want []int
		for _, w := range set {
			if w == 3 || w == 700 {
				want = append(want, w)
			}
		}
		var got []int
		for j, x := range out {
			for ; x != 0; x &= x - 1 {
				got = append(got, 64*j+trailing(x))
			}
		}
		if !ok || c != len(want) || !slices.Equal(got, want) {
			t.Fatalf("set %v masked: %v (count %d, ok %v), want %v", set, got, c, ok, want)
		}
	}
}

// Readers racing one writer that moves an entry through every shape see,
// for a worker that stays in the set throughout, that worker at every read
// (run with -race).
func TestWide_ReadersSeeTheSteadyWorker(t *testing.T) {
	wr, tab := wide(1024, true)
	const steady = 700
	wr.Attach(2, 42, steady)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make([]uint64, 16)
			for {
				select {
				case <-stop:
					return
				default:
				}
				for try := 0; ; try++ {
					c, ok := wr.Sets.Read(wr.Sets.Find(tab, 2, 42), nil, out)
					if !ok {
						continue
					}
					if c == 0 || out[steady>>6]&(1<<(steady&63)) == 0 {
						panic("a reader lost the worker that never left")
					}
					break
				}
			}
		}()
	}
	others := []int{1, 2, 63, 64, 900, 1023}
	for range 3000 {
		for _, w := range others {
			wr.Attach(2, 42, w)
		}
		for _, w := range others {
			wr.Detach(2, 42, w)
		}
	}
	close(stop)
	wg.Wait()
}

// AttachRun attaches a worker to a run of entries at consecutive positions
// up to the first that holds it already, whatever the shapes it meets,
// against a model, for workers below slot 62 and past it.
func TestWide_AttachRun(t *testing.T) {
	for _, maxWorkers := range []int{256, 4096} {
		wr, tab := wide(maxWorkers, true)
		words := bitset.Words(maxWorkers)
		r := rand.New(rand.NewPCG(uint64(maxWorkers), 9))
		model := map[[2]uint64]map[int]bool{}
		for step := range 3000 {
			w := []int{1, 40, 61, 62, 100, maxWorkers - 1}[r.IntN(6)]
			pos := r.IntN(4)
			keys := make([]keyhash.Key, r.IntN(12))
			for i := range keys {
				keys[i] = wr.Key(uint64(1 + r.IntN(5)))
			}
			want := len(keys)
			for i, k := range keys {
				if model[[2]uint64{uint64(pos + i), k.K}][w] {
					want = i
					break
				}
			}
			if got := wr.AttachRun(pos, keys, w); got != want {
				t.Fatalf("step %d: AttachRun of worker %d = %d, want %d", step, w, got, want)
			}
			for i := range want {
				e := [2]uint64{uint64(pos + i), keys[i].K}
				if model[e] == nil {
					model[e] = map[int]bool{}
				}
				model[e][w] = true
			}
			if r.IntN(3) == 0 { // a worker leaves an entry
				for e, m := range model {
					for x := range m {
						wr.Detach(int(e[0]), e[1], x)
						delete(m, x)
						break
					}
					break
				}
			}
			for e, m := range model {
				got := members(t, wr.Sets, tab, int(e[0]), e[1], words)
				if want := slices.Sorted(mapKeys(m)); !slices.Equal(got, want) {
					t.Fatalf("step %d: entry %v reads %v, model %v", step, e, got, want)
				}
			}
		}
	}
}
