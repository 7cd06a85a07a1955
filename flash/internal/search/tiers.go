package search

import "math/bits"

// A tiered search (Index.Tiers > 1). Worker slot s has a place per tier
// in the sets, s·T + c: set in an entry when the worker holds its content
// in tier c or a faster one, through every ancestor (worker.recut). One
// jump search over the places gives each place's depth; emitTiered folds
// a slot's places into one hit, its depth per tier in Hit.Tiers, nested,
// and its Depth the slowest tier's.

// RunTiered is Run for a tiered index (Index.Tiers > 1): its scratch
// sized before the search and emptied after it (the search empties it
// between runs).
func (f *Finder) RunTiered(sets []uint64, sc *Scratch) int {
	f.sc = sc
	sc.sizeTiers(f.ix.Dir.Len(), f.ix.Tiers)
	probes := f.Run(sets, sc)
	sc.resetTiers()
	return probes
}

// sizeTiers makes the tiered search's scratch fit slots worker slots of
// tiers places each.
func (sc *Scratch) sizeTiers(slots, tiers int) {
	if len(sc.tierHit) < slots {
		sc.tierHit = make([]int32, slots)
		sc.tierSeen = make([]int32, 0, slots)
	}
	if sc.splitBy != tiers {
		// split[o] is offset o from a place split into slots (high
		// byte) and tier (low byte), for offsets within a word past a
		// place of any tier.
		for o := range sc.split {
			sc.split[o] = uint16(o/tiers)<<8 | uint16(o%tiers)
		}
		sc.splitBy = tiers
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
// that tier's depth to its slot's hit, made at its slot's first place
// (whose description alone it reads). A depth lifts the slower tiers' to
// it: a place read while its worker was written may show a faster tier
// deeper than a slower one, whose blocks the worker held too. So the
// depths nest, and the hit's Depth is the deepest. exact, in a joint
// search's joint pass, is each place's exact depth: the slowest tier's
// gives the hit's Predicted.
func (f *Finder) emitTiered(s []uint64, depth int, exact []int32) {
	ix, sc := f.ix, f.sc
	t := ix.Tiers
	ms := f.hits
	n := len(ms)
	if need := n + popcount(s); need > cap(ms) {
		ms = append(ms[:cap(ms)], make([]Hit, need-cap(ms))...)
	}
	ms = ms[:cap(ms)]
	info, split := ix.Dir.Infos(), &sc.split
	tokens := depth * ix.BlockSize
	emitted := false
	// last is the slot of the place last folded: a slot's places are
	// consecutive, fastest first, so a later place of it at this depth
	// lifts only tiers its first one did (a joint pass folds each, for
	// Predicted).
	last := -1
	for wi, word := range s {
		// The word's first place, split into slot and tier once; each
		// bit's offset from it through the table (no division a bit).
		p0 := (f.base + wi) << 6
		slot0, c0 := p0/t, p0%t
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &= word - 1
			qr := split[c0+b]
			slot, c := slot0+int(qr>>8), int(qr&0xff)
			if slot == last && exact == nil {
				continue
			}
			var m *Hit
			if k := sc.tierHit[slot]; k != 0 && !f.careful {
				m = &ms[k-1]
			} else {
				id, rank, blocks, ok := f.owner(info, p0|b)
				if !ok {
					continue
				}
				if k != 0 {
					m = &ms[k-1]
				} else {
					if n >= len(ms) {
						continue
					}
					m = &ms[n]
					n++
					m.ID, m.Rank, m.Blocks, m.Predicted, m.Depth = id, rank, blocks, 0, 0
					m.Tiers = [len(m.Tiers)]int32{}
					sc.tierHit[slot] = int32(n)
					sc.tierSeen = append(sc.tierSeen, int32(slot))
				}
			}
			for k := c; k < t; k++ {
				m.Tiers[k] = max(m.Tiers[k], int32(depth))
			}
			if depth > m.Depth {
				m.Depth, m.Tokens = depth, tokens
			}
			if exact != nil && c == t-1 {
				m.Predicted = depth - min(int(exact[p0|b]), depth)
			}
			last, emitted = slot, true
		}
	}
	if emitted {
		f.deepest = max(f.deepest, depth)
	}
	f.hits = ms[:n]
}
