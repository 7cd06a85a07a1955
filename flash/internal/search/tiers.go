package search

import "math/bits"

// A tiered search (Index.Tiers > 1). Worker slot s has a place per tier
// in the sets, s·T + c: set in an entry when the worker holds its content
// in tier c or a faster one, through every ancestor (worker.recut). One
// jump search over the places gives each place's depth; emitTiered folds
// a slot's places into one hit, its depth per tier in Hit.Tiers, and
// finishTiers makes each hit's depths nest and its Depth the slowest
// tier's.

// sizeTiers makes the tiered search's scratch fit slots worker slots.
func (sc *Scratch) sizeTiers(slots int) {
	if len(sc.tierHit) < slots {
		sc.tierHit = make([]int32, slots)
		sc.tierSeen = make([]int32, 0, slots)
	}
	sc.dirty = true // the slower tiers' depths, for a one-tier search after it
}

// resetTiers forgets the hits of the slots a tiered search set.
func (sc *Scratch) resetTiers() {
	for _, s := range sc.tierSeen {
		sc.tierHit[s] = 0
	}
	sc.tierSeen = sc.tierSeen[:0]
}

// emitTiered is Emit in a tiered search: each place of s at depth adds
// that tier's depth to its slot's hit, made at its slot's first place.
// exact, in a joint search's joint pass, is each place's exact depth: the
// slowest tier's gives the hit's Predicted.
func (f *Finder) emitTiered(s []uint64, depth int, exact []int32) {
	ix, sc := f.ix, f.sc
	t := ix.Tiers
	ms := f.hits
	n := len(ms)
	if need := n + popcount(s); need > cap(ms) {
		ms = append(ms[:cap(ms)], make([]Hit, need-cap(ms))...)
	}
	ms = ms[:cap(ms)]
	dir, info := ix.Dir, ix.Dir.Infos()
	emitted := false
	for wi, word := range s {
		for word != 0 {
			i := (f.base+wi)<<6 | bits.TrailingZeros64(word)
			word &= word - 1
			var id uint64
			var rank uint32
			var blocks int
			ok := true
			if f.careful {
				id, rank, blocks, ok = dir.Owned(i, f.epoch)
			} else if in := &info[i]; in.Live() {
				id, rank, blocks = in.ID(), in.Rank(), in.Blocks()
			} else {
				ok = false
			}
			if !ok {
				continue
			}
			slot, c := i/t, i%t
			var m *Hit
			if k := sc.tierHit[slot]; k != 0 {
				m = &ms[k-1]
			} else {
				if n >= len(ms) {
					continue
				}
				m = &ms[n]
				*m = Hit{ID: id, Rank: rank, Blocks: blocks}
				n++
				sc.tierHit[slot] = int32(n)
				sc.tierSeen = append(sc.tierSeen, int32(slot))
			}
			m.Tiers[c] = int32(depth)
			if exact != nil && c == t-1 {
				m.Predicted = depth - min(int(exact[i]), depth)
			}
			emitted = true
		}
	}
	if emitted {
		f.deepest = max(f.deepest, depth)
	}
	f.hits = ms[:n]
}

// finishTiers makes each hit's depths per tier nest (a place seen at a
// depth, read while its worker was written, lifts the slower tiers' to
// it: they held those blocks too), and sets its Depth, the slowest
// tier's, and Tokens.
func finishTiers(hits []Hit, tiers, blockSize int) {
	for k := range hits {
		m := &hits[k]
		for c := 1; c < tiers; c++ {
			m.Tiers[c] = max(m.Tiers[c], m.Tiers[c-1])
		}
		m.Depth = int(m.Tiers[tiers-1])
		m.Tokens = m.Depth * blockSize
		m.Predicted = min(m.Predicted, m.Depth)
	}
}
