package flash

import (
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/flashindexer/flashindexer/bitset"
	"github.com/flashindexer/flashindexer/jump"
	"github.com/flashindexer/flashindexer/shardmap"
)

// finder is one FindMatches call's state, on the caller's stack.
type finder struct {
	ix       *Indexer
	tab      *shardmap.Map // the table being searched
	locals   []LocalHash
	seqs     []SeqHash
	computed int // seqs[:computed] are known
	dst      *Scores
	epoch    uint64 // the index's slot epoch when the search began
	careful  bool   // Emit checks each slot's owner (a slot changed hands)
	probes   int
}

// seq returns the query's sequence hash at position i, extending the lazily
// computed chain as far as needed.
func (f *finder) seq(i int) SeqHash {
	for f.computed <= i {
		c := f.computed
		if c == 0 {
			f.seqs[0] = SeqHash(f.locals[0])
		} else {
			f.seqs[c] = Chain(f.seqs[c-1], f.locals[c])
		}
		f.computed++
	}
	return f.seqs[i]
}

// FindMatches writes into dst every worker's depth for q: the number of
// leading blocks of q it holds. Lock-free; with a reused dst it allocates
// nothing. Sequence hashes are computed only as deep as the search reaches,
// and not at all when q carries them.
//
// The search (jump search with binary search inside a failed jump):
// the active set starts as the workers holding position 0; at checkpoints
// J apart it tests popcount(active AND holders) == popcount(active), an exact
// subset test since every worker's set is prefix-closed; on a shortfall the
// workers that dropped out are located by binary search inside the jump,
// O(log J) probes per group of drop-outs, and the jumps resume.
func (ix *Indexer) FindMatches(q Query, dst *Scores) {
	dst.Reset()
	n := len(q.Locals)
	st := &ix.queries[(uintptr(unsafe.Pointer(dst))>>6)%queryStripes]
	st.queries.Add(1)
	st.blocks.Add(uint64(n))
	dst.probes = 0
	if n == 0 {
		return
	}
	need := jump.Scratch(ix.bw, ix.jump)
	if cap(dst.sets) < need {
		dst.sets = make([]uint64, need)
	}
	f := finder{ix: ix, locals: q.Locals, dst: dst}
	if q.HasSeqs() {
		f.seqs, f.computed = q.Seqs, n
	} else {
		f.seqs = dst.SeqScratch(n)
	}
	// Each worker is in one lane, so with a table per lane the searches
	// find disjoint workers. A slot that changes hands while they run may be
	// reported as its new worker: then they run again, and Emit checks each
	// slot's owner.
	f.epoch = ix.slotEpoch.Load()
	f.careful = f.epoch&1 != 0
	for {
		for _, t := range ix.tabs {
			f.tab = t
			f.probes += jumpSearch(&f, n, ix.jump, ix.bw, dst.sets[:need])
		}
		if f.careful || ix.slotEpoch.Load() == f.epoch {
			break
		}
		dst.Matches = dst.Matches[:0]
		f.epoch, f.careful = ix.slotEpoch.Load(), true
	}
	dst.probes = f.probes
}

// The finder is the search's prober (package jump); jumpSearch is the
// search specialized to it (search_gen.go).
var _ jump.Prober = (*finder)(nil)

// Probe (the search's prober) writes into out the members of mask (all workers when mask is nil)
// that hold the query's block at pos, and returns how many there are.
// maskCount is popcount(mask) when the caller knows it, else -1.
func (f *finder) Probe(pos int, mask, out []uint64, maskCount int) int {
	ix := f.ix
	seq := f.seq(pos)
	for try := 0; try < maxProbeRetries; try++ {
		if c, ok := ix.sets.Read(ix.sets.Find(f.tab, pos, uint64(seq)), mask, out, maskCount); ok {
			return c
		}
	}
	clear(out)
	return 0
}

// Emit (the search's prober) adds every worker of s with the given depth. It writes the fields in
// place: building each Match on the stack and copying it costs a store-
// forwarding stall per worker, which dominated queries matching many workers.
//
// A bit names a slot, not a worker. When no slot changed hands during the
// search (the slot epoch even and unchanged around it: FindMatches checks),
// each slot's worker is the one whose bit the search saw. Otherwise the
// search runs again carefully: Emit reports a slot's worker only when that
// worker took the slot before the search began and still holds it (its
// intern epoch below the search's, unchanged across the reads, and the slot
// live), so the worker held the slot at every probe that saw the bit. A
// slot that changed hands is left out: its old worker was removed
// meanwhile, and its new one may never have held the prefix. Either way
// each reported worker held one slot throughout, and none is reported
// twice.
func (f *finder) Emit(s []uint64, depth int) {
	ix := f.ix
	ms := f.dst.Matches
	n := len(ms)
	if need := n + bitset.Count(s); need > cap(ms) {
		ms = append(ms[:cap(ms)], make([]Match, need-cap(ms))...)
	}
	ms = ms[:cap(ms)]
	tokens := depth * ix.cfg.BlockSize
	if f.careful {
		n = f.emitCareful(s, ms, n, depth, tokens)
		f.dst.Matches = ms[:n]
		return
	}
	// Word by word, clearing the lowest bit: the loop carries one AND, not
	// a search from the last index.
	for wi, word := range s {
		for word != 0 {
			i := wi<<6 | bits.TrailingZeros64(word)
			word &= word - 1
			in := &ix.info[i]
			if !in.live.Load() || n >= len(ms) {
				continue
			}
			m := &ms[n]
			m.Worker.ID = in.id.Load()
			m.Worker.DPRank = in.rank.Load()
			m.Depth = depth
			m.Tokens = tokens
			m.Blocks = int(in.blocks.Load())
			n++
		}
	}
	f.dst.Matches = ms[:n]
}

// emitCareful is Emit's loop once a slot changed hands during the search:
// each slot's worker is checked with owned. It fills ms from n and returns
// the new length. It is a loop of its own, not a branch in Emit's: the
// branch cost every query that matches many workers about 5%.
func (f *finder) emitCareful(s []uint64, ms []Match, n, depth, tokens int) int {
	ix := f.ix
	for wi, word := range s {
		for word != 0 {
			i := wi<<6 | bits.TrailingZeros64(word)
			word &= word - 1
			in := &ix.info[i]
			if !in.live.Load() || n >= len(ms) {
				continue
			}
			m := &ms[n]
			if !f.owned(in, &ix.since[i], m) {
				continue
			}
			m.Depth = depth
			m.Tokens = tokens
			n++
		}
	}
	return n
}

// owned writes the identity of slot in's worker into m and reports whether
// that worker took the slot before the search began and held it until now
// (Emit, once a slot changed hands during the search).
func (f *finder) owned(in *slotInfo, sinceOf *atomic.Uint64, m *Match) bool {
	since := sinceOf.Load()
	if since >= f.epoch {
		return false
	}
	m.Worker.ID = in.id.Load()
	m.Worker.DPRank = in.rank.Load()
	m.Blocks = int(in.blocks.Load())
	return in.live.Load() && sinceOf.Load() == since
}
