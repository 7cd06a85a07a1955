package search

import (
	"math/bits"

	"github.com/flashindexer/flashindexer/flash/internal/slotdir"
	"github.com/flashindexer/flashindexer/jump"
	"github.com/flashindexer/flashindexer/shardmap"
)

// Scratch is what a search with predictions keeps between its two passes:
// each slot's exact depth, the slots that have one, and a worker set. The
// caller keeps it (with its result) for the next search.
type Scratch struct {
	depths []int32
	seen   []int32
	set    []uint64
	joint  Joint // the search itself: jump.Search's generic code would move one on the stack to the heap
	// dirty: a joint or tiered search wrote Predicted or the slower
	// tiers' depths into the caller's hits, which a Finder, writing every
	// other field, leaves as it finds them.
	dirty bool
	// tierHit is, by worker slot, its hit's index + 1 in a tiered search
	// (0: none yet); tierSeen, the slots it set (emitTiered).
	tierHit  []int32
	tierSeen []int32
	split    [64 + 4]uint16 // offsets into slot and tier (sizeTiers)
	splitBy  int            // the tiers split is for
}

// clean zeroes Predicted and the slower tiers' depths in every hit the
// buffer of hits holds.
func (sc *Scratch) clean(hits []Hit) {
	hits = hits[:cap(hits)]
	for i := range hits {
		hits[i].Predicted = 0
		hits[i].Tiers = [len(hits[i].Tiers)]int32{}
	}
	sc.dirty = false
}

// size makes the scratch fit slots workers and sets of words.
func (sc *Scratch) size(slots, words int) {
	if len(sc.depths) < slots {
		sc.depths, sc.seen = make([]int32, slots), make([]int32, 0, slots)
	}
	if len(sc.set) < words {
		sc.set = make([]uint64, words)
	}
}

// Joint is a search with predictions, a Finder's when any prediction is
// held: a pass over the exact tables records each slot's exact depth, then
// a pass over exact and predicted blocks together reports each worker's
// depth with its exact depth. A worker written between the passes may show
// an exact depth above its depth: it is reported as the depth. Its prober
// runs through jump.Search's generic code (each call indirect): only
// searches with predictions pay for it, and the Finder's code stays as fast
// as before predictions.
type Joint struct {
	Finder
	pred  *shardmap.Map // the predicted table searched with tab; nil in the exact pass
	sc    *Scratch
	exact bool // the exact pass
}

var _ jump.Prober = (*Joint)(nil)

// runJoint runs f's search as a Joint and returns its probes.
func (f *Finder) runJoint(sets []uint64, sc *Scratch) int {
	ix, n := f.ix, len(f.locals)
	j := &sc.joint
	j.Finder, j.sc, sc.dirty = *f, sc, true
	sc.size(len(ix.Dir.Infos()), ix.Words)
	j.epoch = ix.Dir.Epoch()
	j.careful = j.epoch&1 != 0
	for runs := 1; ; runs++ {
		te := ix.epoch(true)
		words := ix.words()
		j.exact, j.pred = true, nil
		for k, t := range ix.Tabs {
			j.tab, j.base = t, ix.base(k)
			j.probes += jump.Search(j, n, ix.Jump, words, sets)
		}
		j.exact = false
		for k, t := range ix.Tabs {
			j.tab, j.pred, j.base = t, ix.Preds[k], ix.base(k)
			j.probes += jump.Search(j, n, ix.Jump, words, sets)
		}
		for _, sl := range sc.seen {
			sc.depths[sl] = 0
		}
		sc.seen = sc.seen[:0]
		if !j.again(runs, ix.epoch(true) == te) {
			break
		}
		if ix.Tiers > 1 {
			sc.resetTiers()
		}
	}
	f.hits, f.computed, f.probes, f.deepest = j.hits, j.computed, j.probes, j.deepest
	j.Finder = Finder{} // keeps no reference to the query or its result
	return f.probes
}

// Probe (the search's prober) reads the exact table, and in the joint pass
// the predicted one too, OR-ing the sets.
func (j *Joint) Probe(pos int, mask, out []uint64, maskCount int) int {
	c := j.Finder.Probe(pos, mask, out, maskCount)
	if j.pred == nil {
		return c
	}
	tmp := j.sc.set[:len(out)]
	if j.read(j.pred, pos, j.seq(pos), mask, tmp, maskCount) == 0 {
		return c
	}
	c = 0
	for i := range out {
		out[i] |= tmp[i]
		c += bits.OnesCount64(out[i])
	}
	return c
}

// read is Finder.Probe's read of one table.
func (j *Joint) read(tab *shardmap.Map, pos int, seq uint64, mask, out []uint64, maskCount int) int {
	if j.stable {
		return j.probeStable(tab, pos, seq, mask, out, maskCount)
	}
	s := &j.ix.Sets
	for try := 0; try < MaxProbeRetries; try++ {
		if c, ok := s.Read(s.Find(tab, pos, seq), mask, out); ok {
			return c
		}
	}
	clear(out)
	return 0
}

// Emit (the search's prober) records each slot's exact depth in the exact
// pass; in the joint pass it reports each worker with both depths, each
// slot's owner checked as emitCareful does once a slot changed hands.
func (j *Joint) Emit(s []uint64, depth int) {
	sc, sl := j.sc, j.ix.Dir
	if !j.exact && j.ix.Tiers > 1 {
		j.emitTiered(s, depth, sc.depths)
		return
	}
	if j.exact {
		for wi, word := range s {
			for word != 0 {
				i := (j.base+wi)<<6 | bits.TrailingZeros64(word)
				word &= word - 1
				if sc.depths[i] == 0 {
					sc.seen = append(sc.seen, int32(i))
				}
				sc.depths[i] = int32(depth)
			}
		}
		return
	}
	ms := j.hits
	n := len(ms)
	if need := n + popcount(s); need > cap(ms) {
		ms = append(ms[:cap(ms)], make([]Hit, need-cap(ms))...)
	}
	ms = ms[:cap(ms)]
	tokens, info := depth*j.ix.BlockSize, sl.Infos()
	for wi, word := range s {
		for word != 0 {
			i := (j.base+wi)<<6 | bits.TrailingZeros64(word)
			word &= word - 1
			id, rank, blocks, ok := j.owner(info, i)
			if !ok || n >= len(ms) {
				continue
			}
			m := &ms[n]
			m.ID, m.Rank, m.Depth, m.Tokens, m.Blocks = id, rank, depth, tokens, blocks
			m.Predicted = depth - min(int(sc.depths[i]), depth)
			m.Tiers[0] = int32(depth)
			n++
		}
	}
	if n > len(j.hits) {
		j.deepest = max(j.deepest, depth)
	}
	j.hits = ms[:n]
}

func popcount(s []uint64) (c int) {
	for _, w := range s {
		c += bits.OnesCount64(w)
	}
	return c
}

// owner returns the worker of place i from the places' descriptions info:
// as Emit reads it, or, once a slot changed hands during the search, only
// if it held its slot throughout (emitCareful).
func (f *Finder) owner(info []slotdir.Info, i int) (id uint64, rank uint32, blocks int, ok bool) {
	if f.careful {
		return f.ix.Dir.Owned(i, f.epoch)
	}
	if in := &info[i]; in.Live() {
		return in.ID(), in.Rank(), in.Blocks(), true
	}
	return 0, 0, 0, false
}
