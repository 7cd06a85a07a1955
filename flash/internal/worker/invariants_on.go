//go:build flash_invariants

package worker

import (
	"fmt"
	"slices"
)

// Invariants reports whether Check verifies (flash_invariants builds),
// growing its own buffers with the workers it checks.
const Invariants = true

// Check verifies a worker's private state against the shared index and
// panics on the first violation.
func (o *Owner) Check(ws *State) {
	if ws == nil {
		return
	}
	fail := func(f string, a ...any) {
		panic(fmt.Sprintf("flash invariant, worker %d rank %d: "+f, append([]any{ws.ID, ws.Rank}, a...)...))
	}
	refs, owned := 0, 0
	kids := slices.Grow(o.checkKids[:0], int(ws.n))[:ws.n]
	clear(kids)
	o.checkKids = kids
	dead := uint32(0)
	for i := uint32(0); i < ws.n; i++ {
		switch n := ws.node(i); {
		case !n.live():
			dead++
		case n.parent != 0:
			kids[n.parent-1]++
		}
	}
	free := uint32(0)
	for f := ws.freed; f != 0; f = ws.node(f - 1).parent {
		if ws.node(f-1).live() || free > ws.n {
			fail("free list reaches node %d, live or past a loop", f-1)
		}
		free++
	}
	if free != ws.nfree || free != dead {
		fail("free list of %d nodes counts %d; %d nodes are not live", free, ws.nfree, dead)
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
		if o.tiered() {
			// Each place c holds the node iff its cut is at most c.
			cut := ws.cut(i)
			if want := ws.cutOf(i); cut != want || n.attached() != (cut != noCut) {
				fail("node %d at %d: cut %d, its tiers and parent make %d (attached=%v)", i, n.pos, cut, want, n.attached())
			}
			for c := range o.Tiers {
				if held := o.holds(int(n.pos), n.seq, ws.Slot*o.Tiers+c); held != (int(cut) <= c) {
					fail("node %d at %d, cut %d: place %d held=%v", i, n.pos, cut, c, held)
				}
			}
		} else if n.attached() != (n.refs() > 0 && parentAttached) {
			fail("node %d at %d: attached=%v refs=%d parent attached=%v", i, n.pos, n.attached(), n.refs(), parentAttached)
		}
		if n.parent != 0 && ws.node(n.parent-1).pos+1 != n.pos {
			fail("node %d at %d under a parent at %d", i, n.pos, ws.node(n.parent-1).pos)
		}
		if !ws.complex && (!n.attached() || n.refs() != 1) {
			fail("simple worker with node %d attached=%v refs=%d", i, n.attached(), n.refs())
		}
		if ws.complex {
			if ci, ok := ws.content.get(n.pos, n.seq); !ok || ci != i {
				fail("content map misses node %d", i)
			}
		}
		if n.attached() && !o.tiered() {
			// The index reaches a live entry for (pos, local, seq), and it
			// holds the worker.
			if !o.holds(int(n.pos), n.seq, ws.Slot) {
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
	over := o.checkOver[:0]
	for range m.b {
		over = append(over, 0)
	}
	o.checkOver = over
	for b := range m.b {
		for j := range idBucketSlots {
			tag := m.b[b].tag(j)
			if tag == 0 {
				continue
			}
			v := m.b[b].vals[j]
			k, ni := uint64(ws.idKey(v)), ws.idNode(v)
			if got, ok := ws.getID(k); !ok || got != ni {
				fail("engine id %x of node %d not found (%d %v)", k, ni, got, ok)
			}
			if !ws.node(ni).live() {
				fail("engine id %x names a free node %d", k, ni)
			}
			h := ws.idHash(uint64(k))
			if idTag(h) != tag {
				fail("engine id %x under tag %d, its hash's is %d", k, tag, idTag(h))
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
// worker slot w.
func (o *Owner) holds(pos int, seq uint64, w int) bool {
	tab, b := o.W.Plane(w)
	return o.W.Sets.Holds(tab.Map(), pos, seq, b)
}

// Attached adds to count, for each of ws's places in the shared sets (its
// slot, or with several tiers its slot's place per tier), the nodes whose
// content's entry holds it: no other entry has it.
func Attached(ws *State, tiers int, count map[int]int) {
	tiers = max(tiers, 1)
	for i := uint32(0); i < ws.n; i++ {
		nd := ws.node(i)
		if !nd.live() || !nd.attached() {
			continue
		}
		cut := 0
		if tiers > 1 {
			cut = int(ws.cut(i))
		}
		for c := cut; c < tiers; c++ {
			count[ws.Slot*tiers+c]++
		}
	}
}
