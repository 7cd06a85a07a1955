package worker

import "math/bits"

// Tiers. In an index of T > 1 tiers (Owner.Tiers) each engine id of a
// worker is held in a set of tiers, a bit each: a node's own id's set in
// the low byte of its tier word (State.tiers, by node), an alias's in the
// alias. A node's tiers are its ids' union.
//
// A node's cut is the fastest tier c at which the node and all its
// ancestors are held in c or a faster tier: max(its fastest tier, its
// parent's cut), or noCut when the node or an ancestor is held nowhere.
// The worker has T places in the shared sets (slot·T + c, slotdir): its
// place c is set in the entry (p, s) if and only if it has a node of
// content (p, s) whose cut is at most c. Each place's positions are
// therefore prefix-closed, as one tier's bits are, and nest: place c's
// are place c+1's too. A node is attached when its cut is not noCut.
//
// A tiered worker is complex from the start (content map and lists of
// children), since a change of one node's tiers moves its descendants'
// cuts; its nodes are not compacted.

// noCut is the cut of a node held in no tier through its ancestors.
const noCut = 15

// A tier word: the own id's tiers (bits 0-7) and the node's cut (8-11).
const (
	twTiers  = 0xff
	twCutBit = 8
)

// tiered reports whether the owner's index has more than one tier.
func (o *Owner) tiered() bool { return o.Tiers > 1 }

// tw returns node i's tier word, growing the words to cover it.
func (ws *State) tw(i uint32) *uint32 {
	if int(i) >= len(ws.tiers) {
		ws.tiers = append(ws.tiers, make([]uint32, int(i)+1-len(ws.tiers))...)
	}
	return &ws.tiers[i]
}

// cut returns node i's cut.
func (ws *State) cut(i uint32) uint8 { return uint8(*ws.tw(i) >> twCutBit & 0xf) }

// setCut sets node i's cut, and its attachment with it.
func (ws *State) setCut(i uint32, c uint8) {
	w := ws.tw(i)
	*w = *w&^(0xf<<twCutBit) | uint32(c)<<twCutBit
	ws.node(i).setAttached(c != noCut)
}

// freshTiers gives a node just made its tier word: no tiers, no cut.
func (ws *State) freshTiers(i uint32) { *ws.tw(i) = noCut << twCutBit }

// idTiers returns the tiers of the id whose map value is v (idValue: a
// node, its own id, or idAlias|alias).
func (ws *State) idTiers(v uint32) uint8 {
	if v&idAlias != 0 {
		return ws.aliases[v&^idAlias].tiers
	}
	return uint8(*ws.tw(v) & twTiers)
}

// setIDTiers sets the tiers of the id whose map value is v to m.
func (ws *State) setIDTiers(v uint32, m uint8) {
	if v&idAlias != 0 {
		ws.aliases[v&^idAlias].tiers = m
		return
	}
	w := ws.tw(v)
	*w = *w&^twTiers | uint32(m)
}

// nodeTiers returns the tiers that hold node i: its ids' union.
func (ws *State) nodeTiers(i uint32) uint8 {
	n := ws.node(i)
	var m uint8
	own := uint32(0)
	if n.st&nodeOwnID != 0 {
		m, own = uint8(*ws.tw(i)&twTiers), 1
	}
	if n.refs() > own {
		for j := range ws.aliases {
			if a := &ws.aliases[j]; a.node == i {
				m |= a.tiers
			}
		}
	}
	return m
}

// cutOf computes node i's cut from its tiers and its parent's cut.
func (ws *State) cutOf(i uint32) uint8 {
	m := ws.nodeTiers(i)
	if m == 0 {
		return noCut
	}
	c := uint8(bits.TrailingZeros8(m))
	if p := ws.node(i).parent; p != 0 {
		c = max(c, ws.cut(p-1)) // noCut is above every tier
	}
	return c
}

// recut sets node i's cut to what its tiers and its parent's cut make it,
// and then its descendants', writing the places of the worker that change:
// parents before children, and each node's slower places set before its
// faster ones and cleared after them, so that a reader sees each place
// prefix-closed and the places nested.
func (o *Owner) recut(ws *State, i uint32) {
	st := append(o.stack[:0], i)
	for len(st) > 0 {
		k := st[len(st)-1]
		st = st[:len(st)-1]
		was, now := ws.cut(k), ws.cutOf(k)
		if was == now {
			continue
		}
		n := ws.node(k)
		o.moveCut(ws, int(n.pos), n.seq, was, now)
		ws.setCut(k, now)
		if n.kids == 0 {
			continue
		}
		for c := ws.lk(k).child; c != 0; c = ws.lk(c - 1).next {
			if ws.node(c-1).refs() > 0 {
				st = append(st, c-1)
			}
		}
	}
	o.stack = st
}

// moveCut writes the worker's places of content (pos, seq) for a cut that
// moves from was to now: sets the places in [now, was) when it falls,
// clears those in [was, now) when it rises.
func (o *Owner) moveCut(ws *State, pos int, seq uint64, was, now uint8) {
	t := uint8(o.Tiers)
	base := ws.Slot * o.Tiers
	if now < was {
		for c := min(was, t); c > now; c-- { // slowest first
			o.W.Attach(pos, seq, base+int(c-1))
		}
		return
	}
	for c := was; c < min(now, t); c++ { // fastest first
		o.W.Detach(pos, seq, base+int(c))
	}
}

// addTier adds the event's tier (Owner.Tier) to id k of node ni, which the
// worker holds, and reports whether it was not in it.
//
// It runs within Commit, while the map holds the batch's claims, whose keys
// are the batch's (gone by then): it finds the id through its node, not
// the map.
func (o *Owner) addTier(ws *State, k uint64, ni uint32) bool {
	v := ni
	if n := ws.node(ni); n.st&nodeOwnID == 0 || n.ext != k {
		for j := range ws.aliases {
			if a := &ws.aliases[j]; a.node == ni && a.ext == k {
				v = idAlias | uint32(j)
			}
		}
	}
	m, bit := ws.idTiers(v), uint8(1)<<o.Tier
	if m&bit != 0 {
		return false
	}
	ws.setIDTiers(v, m|bit)
	o.recut(ws, ni)
	return true
}

// removeTiered is Remove in an index of several tiers: each id leaves the
// event's tier (Owner.Tier), and the worker when that was its last.
func (o *Owner) removeTiered(ws *State, hashes []uint64) (removed int) {
	bit := uint8(1) << o.Tier
	for _, h := range hashes {
		v, ok := ws.idValue(h)
		if !ok {
			continue
		}
		ni := ws.idNode(v)
		m := ws.idTiers(v)
		if m&bit == 0 {
			continue // held, but not in this tier
		}
		removed++
		if m &^= bit; m != 0 {
			ws.setIDTiers(v, m)
			o.recut(ws, ni)
			continue
		}
		ws.dropID(h)
		n := ws.node(ni)
		n.st-- // one ref fewer
		o.recut(ws, ni)
		if n.refs() > 0 {
			continue
		}
		if o.TrackGone {
			o.Gone = append(o.Gone, Content{n.pos, n.seq})
		}
		ws.collect(ni)
	}
	return removed
}

// ClearTier takes the event's tier (Owner.Tier) from every id of ws that
// is held in it, as a Removed event of them all would, and returns how
// many it took.
func (o *Owner) ClearTier(ws *State) int {
	bit := uint8(1) << o.Tier
	var hs []uint64
	for i := uint32(0); i < ws.n; i++ {
		if n := ws.node(i); n.live() && n.st&nodeOwnID != 0 && uint8(*ws.tw(i))&bit != 0 {
			hs = append(hs, n.ext)
		}
	}
	for j := range ws.aliases {
		if a := &ws.aliases[j]; a.node != freeAlias && a.tiers&bit != 0 {
			hs = append(hs, a.ext)
		}
	}
	return o.removeTiered(ws, hs)
}

// clearTiered clears every place of every attached node of ws: Clear's
// shared writes in an index of several tiers.
func (o *Owner) clearTiered(ws *State) {
	for i := uint32(0); i < ws.n; i++ {
		if n := ws.node(i); n.live() && n.attached() {
			o.moveCut(ws, int(n.pos), n.seq, ws.cut(i), noCut)
			n.setAttached(false)
		}
	}
	clear(ws.tiers)
	ws.tiers = ws.tiers[:0]
}
