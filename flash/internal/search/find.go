package search

import (
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/flashindexer/flashindexer/bitset"
	"github.com/flashindexer/flashindexer/flash/internal/entry"
	"github.com/flashindexer/flashindexer/flash/internal/slotdir"
	"github.com/flashindexer/flashindexer/internal/chain"
	"github.com/flashindexer/flashindexer/jump"
	"github.com/flashindexer/flashindexer/shardmap"
)

// MaxProbeRetries bounds how often a probe restarts after seeing a slot
// change under it; past it the probe counts as a miss.
const MaxProbeRetries = 64

// MaxSearchRetries: a search runs again when a table it read was reused
// meanwhile (shardmap.Map.Epoch); after this many runs it checks each
// probe on its own instead (Finder.stable), so that writers reusing tables
// without pause cannot hold a query back.
const MaxSearchRetries = 4

// Hit is one worker's answer (flash.Match's layout).
type Hit struct {
	ID        uint64
	Rank      uint32
	Depth     int
	Tokens    int
	Blocks    int
	Predicted int
	Tiers     [4]int32 // flash.MaxTiers
}

// Index is what a search reads.
type Index struct {
	Sets entry.Sets // a copy: read at every probe
	// Tabs are the shared table, or one per lane; with Planes > 1, each
	// of those is Planes tables, one after another, table k holding the
	// slots of plane k%Planes (64 slots a plane, one word a set).
	Tabs      []*shardmap.Map
	Planes    int
	Dir       *slotdir.Table
	Jump      int // distance between checkpoints
	Words     int // words per worker set (1 with planes)
	BlockSize int
	// Tiers is the index's number of tiers: each worker slot s has a
	// place per tier in the sets, s·Tiers + c (slotdir), and a search
	// reports each worker once with its depth per tier (emitTiered).
	Tiers int
	// Preds are the predicted blocks' tables, one per table of Tabs;
	// Predicted counts their blocks (0: none to search).
	Preds     []*shardmap.Map
	Predicted *atomic.Int64

	Tally   Tally   // every query, counted (Find)
	Latency Latency // sampled queries, timed (Find)
}

// TableStats returns the bytes of every shared table (exact and predicted
// blocks'), the part of them set aside and not yet used, and their keys.
func (ix *Index) TableStats() (bytes, room, keys int) {
	for _, t := range slices.Concat(ix.Tabs, ix.Preds) {
		st := t.Stats()
		bytes, room, keys = bytes+st.Bytes, room+st.Reserved, keys+st.Keys
	}
	return bytes, room, keys
}

// base is the first word of the slots table k's sets hold.
func (ix *Index) base(k int) int {
	if ix.Planes > 1 {
		return k % ix.Planes
	}
	return 0
}

// words is how many words of a worker set a search carries: those that
// cover every slot given out (read after the slot epoch the search checks).
func (ix *Index) words() int { return min(ix.Dir.Words(), ix.Words) }

// epoch sums the epochs of the tables a search reads (with the predicted
// ones when preds): it is unchanged only if none of them reused a table.
func (ix *Index) epoch(preds bool) (e uint64) {
	for _, t := range ix.Tabs {
		e += t.Epoch()
	}
	if preds {
		for _, t := range ix.Preds {
			e += t.Epoch()
		}
	}
	return e
}

// Tally counts queries, their blocks, the queries some worker matched and
// the deepest match's blocks, over stripes of a cache line each, so that
// readers on two cores do not bounce one line: a query picks its stripe
// from a key of its own (its result's address). A stripe packs its recent
// counts in one word, so a query pays one atomic add for all four (two
// adds were about 12 ns of a 64 ns query):
//
//	bits 54–63  queries        bits 22–43  blocks
//	bits 44–53  hits           bits  0–21  matched blocks
//
// When any part passes half its room, the query that took it there folds
// the word into the stripe's totals; a query of bigBlocks or more counts
// straight into the totals, so that one add never carries a part past its
// room while others fold (128 adders at once would be needed).
type Tally [tallyStripes]stripe

const (
	tallyStripes = 16
	queryShift   = 54
	hitShift     = 44
	blockShift   = 22
	smallMask    = 1<<10 - 1 // queries, hits
	bigMask      = 1<<22 - 1 // blocks, matched
	// foldMask: the top bit of every part, set at half its room.
	foldMask  = 1<<(queryShift+9) | 1<<(hitShift+9) | 1<<(blockShift+21) | 1<<21
	bigBlocks = 1 << 14
)

type stripe struct {
	packed                         atomic.Uint64
	queries, blocks, hits, matched atomic.Uint64 // folded
	seq                            atomic.Uint64 // odd while a fold runs
	mu                             sync.Mutex    // folds
	_                              [64 - 56]byte
}

// Count counts one query of blocks blocks (fewer than BigBlocks: see
// CountBig) whose deepest match was deepest blocks (0: no worker
// matched). When it returns true the caller MUST call Fold with the same
// key.
func (t *Tally) Count(key uintptr, blocks, deepest int) (fold bool) {
	h := uint64(0)
	if deepest > 0 {
		h = 1 << hitShift
	}
	return t[(key>>6)%tallyStripes].packed.Add(1<<queryShift|h|uint64(blocks)<<blockShift|uint64(deepest))&foldMask != 0
}

// BigBlocks: a query of this many blocks or more is counted by CountBig.
const BigBlocks = bigBlocks

// CountBig counts a query of BigBlocks or more straight into the totals.
func (t *Tally) CountBig(key uintptr, blocks, deepest int) {
	st := &t[(key>>6)%tallyStripes]
	st.mu.Lock()
	defer st.mu.Unlock()
	st.seq.Add(1)
	st.queries.Add(1)
	st.blocks.Add(uint64(blocks))
	if deepest > 0 {
		st.hits.Add(1)
		st.matched.Add(uint64(deepest))
	}
	st.seq.Add(1)
}

// Fold moves a stripe's packed counts into its totals. (A call inside
// Count would keep Count from being inlined.)
func (t *Tally) Fold(key uintptr) {
	st := &t[(key>>6)%tallyStripes]
	st.mu.Lock()
	defer st.mu.Unlock()
	st.seq.Add(1)
	v := st.packed.Swap(0)
	st.queries.Add(v >> queryShift)
	st.hits.Add(v >> hitShift & smallMask)
	st.blocks.Add(v >> blockShift & bigMask)
	st.matched.Add(v & bigMask)
	st.seq.Add(1)
}

// Sum returns the queries counted and their blocks, and of them the
// queries some worker matched and the deepest matches' blocks: each stripe
// read between two folds, so the sums never go back.
func (t *Tally) Sum() (queries, blocks, hits, matched uint64) {
	for i := range t {
		st := &t[i]
		for {
			s := st.seq.Load()
			q, b, h, m, v := st.queries.Load(), st.blocks.Load(), st.hits.Load(), st.matched.Load(), st.packed.Load()
			if s&1 == 0 && st.seq.Load() == s {
				queries += q + v>>queryShift
				hits += h + v>>hitShift&smallMask
				blocks += b + v>>blockShift&bigMask
				matched += m + v&bigMask
				break
			}
			runtime.Gosched()
		}
	}
	return queries, blocks, hits, matched
}

// Finder is one search's state. The caller keeps it on its stack: Start,
// then Run, then Hits. Run keeps no pointer to it.
type Finder struct {
	ix       *Index
	tab      *shardmap.Map // the table being searched
	base     int           // its sets' first word of the slots (Index.base)
	locals   []uint64
	seqs     []uint64
	computed int // seqs[:computed] are known
	sc       *Scratch
	hits     []Hit
	start    int    // len(hits) at Start
	epoch    uint64 // the slot epoch when the search began
	careful  bool   // Emit checks each slot's owner (a slot changed hands)
	stable   bool   // each probe checks that its table reused nothing meanwhile
	probes   int
	deepest  int // the deepest hit's depth (0: none)
}

// Start sets up a search of ix for the query locals, with seqs[:computed]
// its known sequence hashes (extended as deep as the search reaches;
// len(seqs) ≥ len(locals)), appending to hits. It sets the fields one by
// one: a composite literal is built aside and copied in 16-byte moves,
// which stall on the 8-byte stores that built it (about 10 ns a query).
func (f *Finder) Start(ix *Index, locals, seqs []uint64, computed int, hits []Hit) {
	f.ix, f.locals, f.seqs, f.computed = ix, locals, seqs, computed
	f.hits, f.start, f.probes = hits, len(hits), 0
	f.stable, f.deepest = false, 0
}

// Hits returns the hits: what Start was given, and the search's after Run.
func (f *Finder) Hits() []Hit { return f.hits }

// Deepest returns the deepest hit's depth after Run, 0 when none: the
// search knows it without a pass over the hits.
func (f *Finder) Deepest() int { return f.deepest }

// Run searches every table, appending each worker's depth to the hits, and
// returns the number of entries it looked up: D/J + drop-out groups × log
// J. sets is scratch of jump.Scratch(Words, Jump) words; sc is the
// scratch of a search with predictions (Joint), used when any is held.
// A tiered index's search runs through RunTiered.
func (f *Finder) Run(sets []uint64, sc *Scratch) int {
	ix, n := f.ix, len(f.locals)
	if n == 0 {
		return 0
	}
	if ix.Predicted.Load() > 0 {
		return f.runJoint(sets, sc)
	}
	if sc.dirty && ix.Tiers <= 1 {
		sc.clean(f.hits)
	}
	// Each worker is in one lane and one plane, so with a table per lane
	// or per plane the searches find disjoint workers. A slot that changes hands while they run may be
	// reported as its new worker: then they run again, and Emit checks each
	// slot's owner. A table reused while they run may have shown another
	// position's keys: then they run again.
	//
	// Each run searches sets of the words that cover every slot given
	// out, read after the slot epoch it checks: a slot given out during
	// the run moves the epoch (the run's slots then go through Emit's
	// check, which reports no worker that took its slot after the search
	// began).
	f.epoch = ix.Dir.Epoch()
	f.careful = f.epoch&1 != 0
	for runs := 1; ; runs++ {
		te := ix.epoch(false)
		words := ix.words()
		for k, t := range ix.Tabs {
			f.tab, f.base = t, ix.base(k)
			f.probes += jumpSearch(f, n, ix.Jump, words, sets)
		}
		if !f.again(runs, ix.epoch(false) == te) {
			return f.probes
		}
		if ix.Tiers > 1 {
			sc.resetTiers()
		}
	}
}

// again decides, after a run of the search, whether it runs again:
// tablesSame says no table it read was reused meanwhile. It drops the
// run's hits when so, and sets what the next run checks.
func (f *Finder) again(runs int, tablesSame bool) bool {
	tablesSame = tablesSame || f.stable
	slots := f.ix.Dir.Epoch()
	if tablesSame && (f.careful || slots == f.epoch) {
		return false
	}
	f.hits, f.deepest = f.hits[:f.start], 0
	if !tablesSame && runs >= MaxSearchRetries {
		f.stable = true
	}
	if slots != f.epoch {
		f.epoch, f.careful = slots, true
	}
	return true
}

// seq returns the query's sequence hash at position i, extending the lazily
// computed chain as far as needed.
func (f *Finder) seq(i int) uint64 {
	for f.computed <= i {
		c := f.computed
		if c == 0 {
			f.seqs[0] = f.locals[0]
		} else {
			f.seqs[c] = chain.Chain(f.seqs[c-1], f.locals[c])
		}
		f.computed++
	}
	return f.seqs[i]
}

// The Finder is the search's prober (package jump); jumpSearch is the
// search specialized to it (search_gen.go).
var _ jump.Prober = (*Finder)(nil)

// Probe (the search's prober) writes into out the members of mask (all
// workers when mask is nil) that hold the query's block at pos, and returns
// how many there are. maskCount is popcount(mask) when the caller knows it,
// else -1.
func (f *Finder) Probe(pos int, mask, out []uint64, maskCount int) int {
	if f.stable {
		return f.probeStable(f.tab, pos, f.seq(pos), mask, out, maskCount)
	}
	s := &f.ix.Sets
	seq := f.seq(pos)
	for try := 0; try < MaxProbeRetries; try++ {
		if c, ok := s.Read(s.Find(f.tab, pos, seq), mask, out); ok {
			return c
		}
	}
	clear(out)
	return 0
}

// probeStable is a probe of tab that also retries when tab reused a table
// while it read (Finder.stable).
func (f *Finder) probeStable(tab *shardmap.Map, pos int, seq uint64, mask, out []uint64, maskCount int) int {
	s := &f.ix.Sets
	for try := 0; try < MaxProbeRetries; try++ {
		e := tab.Epoch()
		if c, ok := s.Read(s.Find(tab, pos, seq), mask, out); ok && tab.Epoch() == e {
			return c
		}
	}
	clear(out)
	return 0
}

// Emit (the search's prober) adds every worker of s with the given depth. It
// writes the fields in place: building each Hit on the stack and copying it
// costs a store-forwarding stall per worker.
//
// A bit names a slot, not a worker. When no slot changed hands during the
// search (Run checks), each slot's worker is the one whose bit the search
// saw. Otherwise the search runs again carefully (emitCareful). Either way
// each reported worker held one slot throughout, and none is reported
// twice.
func (f *Finder) Emit(s []uint64, depth int) {
	if f.ix.Tiers > 1 {
		f.emitTiered(s, depth, nil)
		return
	}
	ms := f.hits
	n := len(ms)
	if need := n + bitset.Count(s); need > cap(ms) {
		ms = append(ms[:cap(ms)], make([]Hit, need-cap(ms))...)
	}
	ms = ms[:cap(ms)]
	tokens := depth * f.ix.BlockSize
	if f.careful {
		f.hits = ms[:f.emitCareful(s, ms, n, depth, tokens)]
		if len(f.hits) > n {
			f.deepest = max(f.deepest, depth)
		}
		return
	}
	info := f.ix.Dir.Infos()
	// Word by word, clearing the lowest bit: the loop carries one AND, not
	// a search from the last index.
	for wi, word := range s {
		for word != 0 {
			i := (f.base+wi)<<6 | bits.TrailingZeros64(word)
			word &= word - 1
			in := &info[i]
			if !in.Live() || n >= len(ms) {
				continue
			}
			m := &ms[n]
			m.ID = in.ID()
			m.Rank = in.Rank()
			m.Depth = depth
			m.Tokens = tokens
			m.Blocks = in.Blocks()
			m.Tiers[0] = int32(depth)
			n++
		}
	}
	if n > len(f.hits) {
		f.deepest = max(f.deepest, depth)
	}
	f.hits = ms[:n]
}

// emitCareful is Emit's loop once a slot changed hands during the search:
// a slot's worker is reported only when it took the slot before the search
// began and still holds it (slotdir.Table.Owned), so it held the slot at
// every probe that saw the bit; a slot that changed hands is left out. It
// fills ms from n and returns the new length. It is a loop of its own, not
// a branch in Emit's: the branch cost every query that matches many
// workers about 5%.
func (f *Finder) emitCareful(s []uint64, ms []Hit, n, depth, tokens int) int {
	sl := f.ix.Dir
	for wi, word := range s {
		for word != 0 {
			i := (f.base+wi)<<6 | bits.TrailingZeros64(word)
			word &= word - 1
			id, rank, blocks, ok := sl.Owned(i, f.epoch)
			if !ok || n >= len(ms) {
				continue
			}
			m := &ms[n]
			m.ID, m.Rank, m.Depth, m.Tokens, m.Blocks = id, rank, depth, tokens, blocks
			m.Tiers[0] = int32(depth)
			n++
		}
	}
	return n
}
