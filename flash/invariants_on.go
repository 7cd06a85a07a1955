//go:build flash_invariants

package flash

import (
	"fmt"
	"slices"

	"github.com/flashindexer/flashindexer/arena"
	"github.com/flashindexer/flashindexer/bitset"
)

// invariants is true in builds with -tags flash_invariants: every applied
// event is followed by a full check of its worker's state.
const invariants = true

// checkWorker verifies a worker's private state against the shared index and
// panics on the first violation.
func (ln *lane) checkWorker(ws *workerState) {
	if ws == nil {
		return
	}
	fail := func(f string, a ...any) {
		panic(fmt.Sprintf("flash invariant, worker %v: "+f, append([]any{ws.w}, a...)...))
	}
	refs, owned := 0, 0
	kids := slices.Grow(ln.checkKids[:0], int(ws.n))[:ws.n]
	clear(kids)
	ln.checkKids = kids
	for i := uint32(0); i < ws.n; i++ {
		if n := ws.node(i); n.live() && n.parent != 0 {
			kids[n.parent-1]++
		}
	}
	for i := uint32(0); i < ws.n; i++ {
		n := ws.node(i)
		if !n.live() {
			continue
		}
		refs += int(n.refs())
		if n.st&nodeOwnID != 0 {
			owned++
			if got, ok := ws.getID(n.ext); !ok || got != i {
				fail("node %d: its own id %x finds node %d (%v)", i, n.ext, got, ok)
			}
		}
		if n.refs() == 0 && n.kids == 0 {
			fail("node %d is a ghost without children", i)
		}
		if n.kids != kids[i] {
			fail("node %d counts %d children, has %d", i, n.kids, kids[i])
		}
		if ws.complex {
			c := uint32(0)
			for k := ws.lk(i).child; k != 0; k = ws.lk(k - 1).next {
				if ws.node(k-1).parent != i+1 {
					fail("node %d lists node %d, a child of %d", i, k-1, ws.node(k-1).parent)
				}
				c++
			}
			if c != n.kids {
				fail("node %d lists %d children, has %d", i, c, n.kids)
			}
		}
		parentAttached := n.parent == 0 || ws.node(n.parent-1).attached()
		if n.attached() != (n.refs() > 0 && parentAttached) {
			fail("node %d at %d: attached=%v refs=%d parent attached=%v", i, n.pos, n.attached(), n.refs(), parentAttached)
		}
		if n.parent != 0 && ws.node(n.parent-1).pos+1 != n.pos {
			fail("node %d at %d under a parent at %d", i, n.pos, ws.node(n.parent-1).pos)
		}
		if !ws.complex && (!n.attached() || n.refs() != 1) {
			fail("simple worker with node %d attached=%v refs=%d", i, n.attached(), n.refs())
		}
		if ws.complex {
			if ci, ok := ws.content.get(contentKey(n.pos, n.seq)); !ok || ci != i {
				fail("content map misses node %d", i)
			}
		}
		if n.attached() {
			// The index reaches a live entry for (pos, local, seq), and it
			// holds the worker.
			if !ln.holds(int(n.pos), n.seq, ws.slot) {
				fail("node %d: no shared entry holds the worker", i)
			}
		}
	}
	if refs != ws.ids.n {
		fail("%d engine ids, %d references", ws.ids.n, refs)
	}
	live := len(ws.aliases) - len(ws.freeAliases)
	if !ws.complex && live != 0 {
		fail("simple worker with %d aliases", live)
	}
	if owned+live != ws.ids.n {
		fail("%d own ids and %d aliases, %d ids", owned, live, ws.ids.n)
	}
	// Every id finds its node, which is live (a loop over the slots, not
	// eachID: a closure would allocate, and the allocation tests run
	// under this build too).
	// Each bucket's overflow count is the number of ids placed past it
	// whose probe started at or before it (or saturated).
	m := &ws.ids
	over := ln.checkOver[:0]
	for range m.b {
		over = append(over, 0)
	}
	ln.checkOver = over
	for b := range m.b {
		for j, tag := range m.b[b].tags {
			if tag == 0 {
				continue
			}
			v := m.b[b].vals[j]
			k, ni := ExternalHash(ws.idKey(v)), ws.idNode(v)
			if got, ok := ws.getID(k); !ok || got != ni {
				fail("engine id %x of node %d not found (%d %v)", k, ni, got, ok)
			}
			if !ws.node(ni).live() {
				fail("engine id %x names a free node %d", k, ni)
			}
			h := ws.idHash(uint64(k))
			if tagOf(h) != tag {
				fail("engine id %x under tag %d, its hash's is %d", k, tag, tagOf(h))
			}
			for p := h & m.bmask; p != uint64(b); p = (p + 1) & m.bmask {
				over[p]++
			}
		}
	}
	for b := range m.b {
		if got := m.b[b].over; got != 255 && int(got) != over[b] {
			fail("id bucket %d counts %d overflows, %d passed it", b, got, over[b])
		}
	}
}

// holds reports whether the entry (pos, seq) of the lane's table holds
// worker slot w (for the invariant checks).
func (ln *lane) holds(pos int, seq SeqHash, w int) bool {
	ix := ln.ix
	e := ix.findEntry(ln.tab, pos, seq)
	if e == 0 {
		return false
	}
	if ix.inline {
		return uint64(e)&(1<<w) != 0
	}
	s := ix.ar.Slot(e.handle().Ref())
	return arena.Current(s, e.handle()) && arena.Seq(s) == uint64(seq) && bitset.AtomicTest(arena.Bits(s), w)
}
