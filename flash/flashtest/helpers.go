package flashtest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/model"
)

// Factory makes a fresh, empty index with the given settings.
type Factory func(t testing.TB, cfg flash.Config) flash.Index

// L returns a deterministic local hash for a small id, so tests can write
// prompts as id lists. Different ids give different hashes.
func L(id uint64) flash.LocalHash {
	x := id*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
	x ^= x >> 29
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 32
	return flash.LocalHash(x)
}

// Prompt is a sequence of local hashes from position 0.
type Prompt []flash.LocalHash

// P builds a prompt from ids (see L).
func P(ids ...uint64) Prompt {
	p := make(Prompt, len(ids))
	for i, id := range ids {
		p[i] = L(id)
	}
	return p
}

// Seq returns the prompt's sequence hashes.
func (p Prompt) Seq() []flash.SeqHash { return flash.ChainLocals(nil, p) }

// Ext is the external hash an engine gives the block whose prefix has
// sequence hash seq; salt models an engine hash that covers more than the
// tokens (a cache salt). Equal prefixes get equal hashes on every worker.
func Ext(seq flash.SeqHash, salt uint64) flash.ExternalHash {
	return flash.ExternalHash(flash.Chain(seq, flash.LocalHash(salt^0x5bd1e995)))
}

// Blocks returns the prompt's blocks [from, to) with their external hashes.
func (p Prompt) Blocks(from, to int, salt uint64) []flash.Block {
	seq := p.Seq()
	out := make([]flash.Block, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, flash.Block{Hash: Ext(seq[i], salt), Local: p[i]})
	}
	return out
}

// Hash returns the external hash of the prompt's block i.
func (p Prompt) Hash(i int, salt uint64) flash.ExternalHash { return Ext(p.Seq()[i], salt) }

// StoreEvent returns the event that stores blocks [from, to) of p on w, under
// the block from-1 as parent when from > 0.
func (p Prompt) StoreEvent(w flash.Worker, from, to int, salt uint64) flash.Event {
	ev := flash.StoredEvent(w, p.Blocks(from, to, salt)...)
	if from > 0 {
		ev = ev.WithParent(p.Hash(from-1, salt))
	}
	return ev
}

// Concat returns the concatenation of prompts.
func Concat(ps ...Prompt) Prompt {
	var out Prompt
	for _, p := range ps {
		out = append(out, p...)
	}
	return out
}

// Seqs generates a prompt of n blocks from a seed id: block i is
// L(seed<<32 | i). The seed takes the high half of each block's id, so it
// must be below 2^32 and n at most 2^32: Seqs panics otherwise, where bits
// would be lost and two seeds' prompts share blocks.
func Seqs(seed uint64, n int) Prompt {
	if seed >= 1<<32 || n < 0 || uint64(n) > 1<<32 {
		panic(fmt.Sprintf("flashtest.Seqs: seed %#x or length %d out of range", seed, n))
	}
	p := make(Prompt, n)
	for i := range p {
		p[i] = L(seed<<32 | uint64(i))
	}
	return p
}

// Variants returns base and n copies of it, copy i with block at+i*step
// replaced by L(id+i): prompts that share prefixes and whose chunks collide
// at equal positions.
func Variants(base Prompt, n, at, step int, id uint64) []Prompt {
	out := []Prompt{base}
	for i := 0; i < n; i++ {
		p := append(Prompt{}, base...)
		p[at+i*step] = L(id + uint64(i))
		out = append(out, p)
	}
	return out
}

// fixture wraps an index under test.
type fixture struct {
	t     testing.TB
	idx   flash.Index
	sc    flash.Scores
	tiers []flash.TierSpec // the index's
}

func newFixture(t testing.TB, f Factory, cfg flash.Config) *fixture {
	idx := f(t, cfg)
	t.Cleanup(func() { _ = idx.Close() })
	return &fixture{t: t, idx: idx, tiers: cfg.Normalize().Tiers}
}

// W returns worker id with DP rank 0.
func W(id uint64) flash.Worker { return flash.Worker{ID: id} }

func (x *fixture) apply(ev flash.Event) {
	x.t.Helper()
	if err := x.idx.Apply(ev); err != nil {
		x.t.Fatalf("Apply(%v of %v): %v", ev.Kind, ev.Worker, err)
	}
}

func (x *fixture) store(w flash.Worker, p Prompt, from, to int) {
	x.t.Helper()
	x.apply(p.StoreEvent(w, from, to, 0))
}

func (x *fixture) remove(w flash.Worker, hashes ...flash.ExternalHash) {
	x.t.Helper()
	x.apply(flash.RemovedEvent(w, hashes...))
}

// reject applies ev and checks it is rejected with want: either Apply returns
// it, or (asynchronous indexes) the rejection is counted.
func (x *fixture) reject(ev flash.Event, want error) {
	x.t.Helper()
	x.idx.Flush()
	before := x.idx.Stats()
	err := x.idx.Apply(ev)
	if err != nil && !errors.Is(err, want) {
		x.t.Fatalf("Apply: got %v, want %v", err, want)
	}
	x.idx.Flush()
	after := x.idx.Stats()
	if after.EventsRejected != before.EventsRejected+1 {
		x.t.Fatalf("EventsRejected %d -> %d, want +1 (%v)", before.EventsRejected, after.EventsRejected, want)
	}
	k, _ := model.RejectCounter(want)
	if got, was := counterOf(after, k), counterOf(before, k); got != was+1 {
		x.t.Fatalf("counter for %v %d -> %d, want +1", want, was, got)
	}
}

// counterOf reads one counter from a Stats snapshot.
func counterOf(s flash.Stats, k model.Counter) uint64 {
	switch k {
	case model.CounterRejectedUnknownParent:
		return s.RejectedUnknownParent
	case model.CounterRejectedHashConflict:
		return s.RejectedHashConflict
	case model.CounterRejectedEmpty:
		return s.RejectedEmpty
	case model.CounterRejectedTooLarge:
		return s.RejectedTooLarge
	case model.CounterRejectedTooDeep:
		return s.RejectedTooDeep
	case model.CounterRejectedTooManyWorkers:
		return s.RejectedTooManyWorkers
	case model.CounterRejectedBadKind:
		return s.RejectedBadKind
	case model.CounterRejectedClosed:
		return s.RejectedClosed
	case model.CounterRejectedQueueFull:
		return s.RejectedQueueFull
	case model.CounterRejectedBadTier:
		return s.RejectedBadTier
	}
	panic(fmt.Sprintf("flashtest: no rejection counter %d", k))
}

// find flushes and returns the depths for q.
func (x *fixture) find(q flash.Query) map[flash.Worker]int {
	x.idx.Flush()
	x.idx.FindMatches(q, &x.sc)
	out := map[flash.Worker]int{}
	for _, m := range x.sc.Matches {
		if m.Depth <= 0 {
			x.t.Fatalf("match with depth %d for %v", m.Depth, m.Worker)
		}
		if _, dup := out[m.Worker]; dup {
			x.t.Fatalf("worker %v listed twice", m.Worker)
		}
		if msg := checkTierDepths(&m, len(x.tiers)); msg != "" {
			x.t.Fatalf("match of %v: %s", m.Worker, msg)
		}
		out[m.Worker] = m.Depth
	}
	return out
}

// bothForms calls f with p's query without sequence hashes, then with them.
func bothForms(p Prompt, f func(q flash.Query, withSeq bool)) {
	for _, withSeq := range []bool{false, true} {
		q := flash.Query{Locals: p}
		if withSeq {
			q.Seqs = p.Seq()
		}
		f(q, withSeq)
	}
}

// expect checks the depths of p, asked both with and without sequence hashes.
func (x *fixture) expect(p Prompt, want map[flash.Worker]int) {
	x.t.Helper()
	bothForms(p, func(q flash.Query, withSeq bool) {
		x.t.Helper()
		got := x.find(q)
		for w, d := range want {
			if d == 0 {
				delete(want, w)
			}
		}
		if !mapsEqual(got, want) {
			x.t.Fatalf("query of %d blocks (seqs=%v): got %s, want %s", len(p), withSeq, fmtDepths(got), fmtDepths(want))
		}
	})
}

func mapsEqual(a, b map[flash.Worker]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func fmtDepths(m map[flash.Worker]int) string {
	ws := make([]flash.Worker, 0, len(m))
	for w := range m {
		ws = append(ws, w)
	}
	slices.SortFunc(ws, func(a, b flash.Worker) int {
		if a.ID != b.ID {
			if a.ID < b.ID {
				return -1
			}
			return 1
		}
		return int(a.DPRank) - int(b.DPRank)
	})
	s := "{"
	for i, w := range ws {
		if i > 0 {
			s += " "
		}
		if i == 12 {
			s += fmt.Sprintf("… %d more", len(ws)-i)
			break
		}
		s += fmt.Sprintf("%d/%d:%d", w.ID, w.DPRank, m[w])
	}
	return s + "}"
}

func (x *fixture) blocks(w flash.Worker, want int) {
	x.t.Helper()
	x.idx.Flush()
	if got := x.idx.BlockCount(w); got != want {
		x.t.Fatalf("BlockCount(%v) = %d, want %d", w, got, want)
	}
}

// checkTierDepths returns what is wrong with m's depths per tier in an
// index of n tiers ("" if nothing): they nest, the slowest is Depth, and
// past n they are 0.
func checkTierDepths(m *flash.Match, n int) string {
	for t, d := range m.TierDepth {
		switch {
		case t >= n && d != 0:
			return fmt.Sprintf("TierDepth %v: tier %d of %d has a depth", m.TierDepth, t, n)
		case t == n-1 && int(d) != m.Depth:
			return fmt.Sprintf("TierDepth %v: the slowest tier's is not Depth %d", m.TierDepth, m.Depth)
		case t > 0 && t < n && d < m.TierDepth[t-1]:
			return fmt.Sprintf("TierDepth %v: tier %d's is below a faster tier's", m.TierDepth, t)
		}
	}
	return ""
}
