package jump_test

import (
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/flashindexer/flashindexer/jump"
)

// model is a query's worker sets as depths: worker w holds positions
// 0..depth[w]-1 (prefix-closed by construction). It answers probes by a
// linear scan and records what the search emits.
type model struct {
	depth   []int
	got     map[int]int // worker → emitted depth
	probes  int
	twice   int  // workers emitted more than once
	badMask bool // a probe's maskCount disagreed with its mask
}

func (m *model) Probe(pos int, mask, out []uint64, maskCount int) int {
	m.probes++
	clear(out)
	if mask != nil && maskCount >= 0 {
		c := 0
		for _, w := range mask {
			c += bits.OnesCount64(w)
		}
		m.badMask = m.badMask || c != maskCount
	}
	n := 0
	for w, d := range m.depth {
		if d > pos && (mask == nil || mask[w>>6]&(1<<(w&63)) != 0) {
			out[w>>6] |= 1 << (w & 63)
			n++
		}
	}
	return n
}

func (m *model) Emit(s []uint64, depth int) {
	for wi, word := range s {
		for ; word != 0; word &= word - 1 {
			w := wi<<6 | bits.TrailingZeros64(word)
			if _, ok := m.got[w]; ok {
				m.twice++
			}
			m.got[w] = depth
		}
	}
}

// check runs the search over depths (a query of n positions, jump J) and
// compares it with the depths themselves, and its probes with Bound.
func check(t *testing.T, depth []int, n, J int) {
	t.Helper()
	bw := max(1, (len(depth)+63)/64)
	m := &model{depth: depth, got: map[int]int{}}
	sets := make([]uint64, jump.Scratch(bw, J))
	probes := jump.Search(m, n, J, bw, sets)
	deepest, groups := 0, map[int]bool{}
	for w, d := range depth {
		if d == 0 {
			if _, ok := m.got[w]; ok {
				t.Fatalf("n=%d J=%d depths %v: worker %d holds nothing, reported at %d", n, J, depth, w, m.got[w])
			}
			continue
		}
		deepest = max(deepest, d)
		groups[d] = true
		if got, ok := m.got[w]; !ok || got != d {
			t.Fatalf("n=%d J=%d depths %v: worker %d at %d (reported %v), want %d", n, J, depth, w, got, ok, d)
		}
	}
	if probes != m.probes {
		t.Fatalf("n=%d J=%d: Search says %d probes, made %d", n, J, probes, m.probes)
	}
	if m.twice != 0 || m.badMask {
		t.Fatalf("n=%d J=%d depths %v: %d workers reported twice, a wrong mask count: %v", n, J, depth, m.twice, m.badMask)
	}
	if b := jump.Bound(deepest, len(groups), J); probes > b {
		t.Fatalf("n=%d J=%d depths %v: %d probes, bound %d", n, J, depth, probes, b)
	}
}

// Random prefix-closed sets: depths drawn from a few groups (as workers that
// share a conversation do) or spread over the query, jumps from 1 to past
// the query.
func TestSearch_AgreesWithLinearScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		n := 1 + r.IntN(300)
		J := 1 << r.IntN(9)
		w := 1 + r.IntN(200)
		depth := make([]int, w)
		groups := make([]int, 1+r.IntN(6))
		for i := range groups {
			groups[i] = r.IntN(n + 1)
		}
		spread := r.IntN(3) == 0
		for i := range depth {
			if spread {
				depth[i] = r.IntN(n + 1)
			} else {
				depth[i] = groups[r.IntN(len(groups))]
			}
		}
		check(t, depth, n, J)
	}
}

// The edges: nobody holds position 0, everybody holds all, one position,
// a jump of one, drop-outs at every position of one jump.
func TestSearch_Edges(t *testing.T) {
	check(t, []int{0, 0, 0}, 10, 4)
	check(t, []int{10, 10, 10}, 10, 4)
	check(t, []int{1, 1}, 1, 64)
	check(t, []int{1, 0, 1}, 1, 1)
	check(t, []int{3, 5, 2, 7, 1}, 7, 1)
	every := func(n int) []int { // a worker stopping at each depth, twice
		d := make([]int, 2*n)
		for i := range d {
			d[i] = 1 + i%n
		}
		return d
	}
	check(t, every(64), 64, 64)
	check(t, every(64), 200, 64)
	check(t, every(200), 200, 16)
	check(t, every(129), 129, 128)
}

// Search allocates nothing.
func TestSearch_ZeroAllocs(t *testing.T) {
	m := &model{depth: []int{5, 17, 17, 40, 3}, got: map[int]int{}}
	sets := make([]uint64, jump.Scratch(1, 16))
	if a := testing.AllocsPerRun(100, func() {
		clear(m.got)
		jump.Search(m, 64, 16, 1, sets)
	}); a != 0 {
		t.Fatalf("%v allocations per search", a)
	}
}

// FuzzSearch: the depths, the query length and the jump from the input.
func FuzzSearch(f *testing.F) {
	f.Add([]byte{9, 2, 3, 1, 7, 7, 0, 4})
	f.Add([]byte{200, 6, 255, 0, 1, 2, 3, 4, 5, 200, 200})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 3 {
			return
		}
		n := 1 + int(b[0])
		J := 1 << (b[1] % 10)
		depth := make([]int, 0, len(b)-2)
		for _, x := range b[2:] {
			depth = append(depth, int(x)%(n+1))
		}
		if len(depth) > 300 {
			depth = depth[:300]
		}
		check(t, depth, n, J)
	})
}
