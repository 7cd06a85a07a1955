//go:build flash_invariants

package lane

import (
	"fmt"
	"maps"

	"github.com/flashindexer/flashindexer/flash/internal/entry"
	"github.com/flashindexer/flashindexer/flash/internal/worker"
)

// checkTables verifies, once Close has stopped the lanes, that every
// worker's bit is in as many entries of the exact blocks' tables as the
// worker has attached nodes. With worker.Check's test after each event that
// every attached node's entry holds the bit, no entry holds a bit its
// worker does not back. It panics on a violation.
func (s *Set) checkTables() {
	for _, ln := range s.lanes {
		ln.mu.Lock()
		defer ln.mu.Unlock()
	}
	want := map[int]int{}
	for _, ln := range s.lanes {
		for _, ws := range ln.workers {
			worker.Attached(ws, s.o.Tiers, want)
		}
	}
	got := map[int]int{}
	planes := max(s.o.Planes, 1)
	for k, tab := range s.o.Tabs {
		base := 64 * (k % planes)
		tab.Range(func(_ int, _, val uint64) bool {
			s.o.Sets.Members(entry.Entry(val), base, func(slot int) { got[slot]++ })
			if !s.o.Sets.Canonical(entry.Entry(val)) {
				panic(fmt.Sprintf("flash invariant: entry value %#x is not its set's one shape", val))
			}
			return true
		})
	}
	if !maps.Equal(got, want) {
		panic(fmt.Sprintf("flash invariant: the tables hold these bits a slot, %v; the workers' attached nodes, %v", got, want))
	}
}
