package flashtest

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"testing"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/model"
)

// Options tune Run for one backend.
type Options struct {
	// Skip maps case names (see Cases) to the reason the backend cannot
	// answer them by design. Skipped cases are reported with t.Skip.
	Skip map[string]string
	// RandomOps is the number of events and queries of the random
	// differential run; 0 means 6,000 (short mode: 1,500).
	RandomOps int
}

type testCase struct {
	name string
	run  func(t testing.TB, f Factory)
}

// Cases returns the names of the conformance cases, in the order Run runs them.
func Cases() []string {
	var names []string
	for _, c := range allCases() {
		names = append(names, c.name)
	}
	return names
}

// Run runs every conformance case against indexes made by f.
func Run(t *testing.T, f Factory, opts ...Options) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	for _, c := range allCases() {
		t.Run(c.name, func(t *testing.T) {
			if why, ok := o.Skip[c.name]; ok {
				t.Skip(why)
			}
			c.run(t, f)
		})
	}
	t.Run("random_differential", func(t *testing.T) {
		n := o.randomOps(t, "random_differential")
		for seed := uint64(1); seed <= 4; seed++ {
			RandomDifferential(t, f, seed, n)
		}
		for seed := uint64(5); seed <= 6; seed++ {
			RandomDifferentialWide(t, f, seed, n)
		}
		for seed := uint64(7); seed <= 8; seed++ {
			RandomDifferentialWider(t, f, seed, n)
		}
	})
	t.Run("tiers_random_differential", func(t *testing.T) {
		n := o.randomOps(t, "tiers_random_differential")
		for seed := uint64(9); seed <= 10; seed++ {
			RandomDifferentialTiers(t, f, seed, n)
		}
	})
}

// randomOps skips the random differential case name when o says so, and
// returns its number of operations.
func (o *Options) randomOps(t *testing.T, name string) int {
	if why, ok := o.Skip[name]; ok {
		t.Skip(why)
	}
	if o.RandomOps > 0 {
		return o.RandomOps
	}
	if testing.Short() {
		return 1500
	}
	return 6000
}

func cfg() flash.Config { return flash.DefaultConfig() }

// allCases is the event cases, then the prediction cases (which skip
// backends that are not Predictors).
func allCases() []testCase { return slices.Concat(cases, predictCases, tierCases) }

var cases = []testCase{
	{"store_find", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		p := Seqs(1, 8)
		x.store(W(1), p, 0, 8)
		x.expect(p, map[flash.Worker]int{W(1): 8})
		x.blocks(W(1), 8)
		x.idx.FindMatches(flash.Query{Locals: p}, &x.sc)
		if len(x.sc.Matches) != 1 || x.sc.Matches[0].Tokens != 8*flash.DefaultBlockSize || x.sc.Matches[0].Blocks != 8 {
			t.Fatalf("match %+v: want 8 blocks, %d tokens", x.sc.Matches, 8*flash.DefaultBlockSize)
		}
	}},
	{"store_in_parts", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		p := Seqs(1, 20)
		x.store(W(1), p, 0, 5)
		x.store(W(1), p, 5, 6)
		x.store(W(1), p, 6, 20)
		x.expect(p, map[flash.Worker]int{W(1): 20})
	}},
	{"partial_match", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		p := Seqs(1, 8)
		x.store(W(1), p, 0, 8)
		x.expect(Concat(p[:5], Seqs(2, 3)), map[flash.Worker]int{W(1): 5})
		x.expect(p[:3], map[flash.Worker]int{W(1): 3})
		x.expect(Seqs(3, 8), map[flash.Worker]int{})
	}},
	{"branching_prefixes", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		pre := Seqs(1, 6)
		a, b := Concat(pre, Seqs(2, 4)), Concat(pre, Seqs(3, 7))
		x.store(W(1), a, 0, len(a))
		x.store(W(2), b, 0, len(b))
		x.store(W(3), b, 0, 6)
		x.store(W(3), a, 6, len(a)) // same worker branches too
		x.expect(a, map[flash.Worker]int{W(1): 10, W(2): 6, W(3): 10})
		x.expect(b, map[flash.Worker]int{W(1): 6, W(2): 13, W(3): 6})
	}},
	{"shared_prefix_many_workers", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		p := Seqs(1, 60)
		want := map[flash.Worker]int{}
		for i := uint64(0); i < 50; i++ {
			n := int(i) + 1
			x.store(W(i), p, 0, n)
			want[W(i)] = n
		}
		x.expect(p, want)
	}},
	{"interleaved_workers", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		ps := []Prompt{Seqs(1, 40), Seqs(2, 40), Seqs(3, 40), Concat(Seqs(1, 20), Seqs(4, 20))}
		for step := 0; step < 40; step += 4 {
			for i, p := range ps {
				x.store(W(uint64(i)), p, step, step+4)
			}
		}
		x.expect(ps[0], map[flash.Worker]int{W(0): 40, W(3): 20})
		x.expect(ps[3], map[flash.Worker]int{W(0): 20, W(3): 40})
		x.expect(ps[1], map[flash.Worker]int{W(1): 40})
	}},
	{"remove_leaf", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		p := Seqs(1, 10)
		x.store(W(1), p, 0, 10)
		x.store(W(2), p, 0, 10)
		x.remove(W(1), p.Hash(9, 0))
		x.expect(p, map[flash.Worker]int{W(1): 9, W(2): 10})
		x.blocks(W(1), 9)
		x.remove(W(1), p.Hash(8, 0), p.Hash(7, 0))
		x.expect(p, map[flash.Worker]int{W(1): 7, W(2): 10})
	}},
	{"remove_mid_chain", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		p := Seqs(1, 100)
		x.store(W(1), p, 0, 100)
		x.store(W(2), p, 0, 100)
		x.remove(W(1), p.Hash(40, 0))
		x.expect(p, map[flash.Worker]int{W(1): 40, W(2): 100})
		x.blocks(W(1), 99)
		// A descendant stored while detached, then the gap filled again: the
		// worker counts through to the end without the engine re-sending them.
		x.remove(W(1), p.Hash(99, 0))
		x.store(W(1), p, 99, 100)
		x.expect(p, map[flash.Worker]int{W(1): 40, W(2): 100})
		x.store(W(1), p, 40, 41)
		x.expect(p, map[flash.Worker]int{W(1): 100, W(2): 100})
		// Removing position 0 leaves the worker with nothing matching.
		x.remove(W(1), p.Hash(0, 0))
		x.expect(p, map[flash.Worker]int{W(2): 100})
		x.store(W(1), p, 0, 1)
		x.expect(p, map[flash.Worker]int{W(1): 100, W(2): 100})
		// Two gaps; filling the later one first changes nothing.
		x.remove(W(1), p.Hash(10, 0), p.Hash(70, 0))
		x.expect(p, map[flash.Worker]int{W(1): 10, W(2): 100})
		x.store(W(1), p, 70, 71)
		x.expect(p, map[flash.Worker]int{W(1): 10, W(2): 100})
		x.store(W(1), p, 10, 11)
		x.expect(p, map[flash.Worker]int{W(1): 100, W(2): 100})
	}},
	{"remove_detached_descendants", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		p := Seqs(1, 30)
		x.store(W(1), p, 0, 30)
		x.remove(W(1), p.Hash(10, 0))
		x.remove(W(1), p.Hash(20, 0)) // a detached block leaves
		x.store(W(1), p, 10, 11)
		x.expect(p, map[flash.Worker]int{W(1): 20})
		x.blocks(W(1), 29)
		x.remove(W(1), p.Hash(5, 0))
		x.apply(flash.ClearedEvent(W(1)))
		x.expect(p, map[flash.Worker]int{})
		x.blocks(W(1), 0)
	}},
	{"remove_unknown_skipped", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		p := Seqs(1, 10)
		x.store(W(1), p, 0, 10)
		x.idx.Flush()
		before := x.idx.Stats()
		x.remove(W(1), 12345, p.Hash(9, 0), 67890)
		x.remove(W(7), 1) // a worker never seen
		x.idx.Flush()
		after := x.idx.Stats()
		if after.RemovesUnknown != before.RemovesUnknown+3 {
			t.Fatalf("RemovesUnknown %d -> %d, want +3", before.RemovesUnknown, after.RemovesUnknown)
		}
		if after.BlocksRemoved != before.BlocksRemoved+1 {
			t.Fatalf("BlocksRemoved %d -> %d, want +1", before.BlocksRemoved, after.BlocksRemoved)
		}
		x.expect(p, map[flash.Worker]int{W(1): 9})
	}},
	{"stats_by_kind", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		p := Seqs(1, 10)
		x.idx.Flush()
		before := x.idx.Stats()
		x.store(W(1), p, 0, 5)
		x.store(W(2), p, 0, 3)
		x.reject(p.StoreEvent(W(1), 7, 10, 0), flash.ErrUnknownParent)
		x.remove(W(1), p.Hash(4, 0))
		x.remove(W(3), 42) // applied: the unknown hash is skipped
		x.reject(flash.Event{Kind: flash.KindRemoved, Worker: W(1)}, flash.ErrEmptyEvent)
		x.apply(flash.ClearedEvent(W(2)))
		x.idx.Flush()
		d := x.idx.Stats()
		got := [6]uint64{
			d.StoredApplied - before.StoredApplied, d.RemovedApplied - before.RemovedApplied,
			d.Clears - before.Clears, d.StoredRejected - before.StoredRejected,
			d.RemovedRejected - before.RemovedRejected, d.ClearedRejected - before.ClearedRejected,
		}
		if want := [6]uint64{2, 2, 1, 1, 1, 0}; got != want {
			t.Fatalf("stored/removed/cleared applied, then rejected: %v, want %v", got, want)
		}
		if a, r := d.EventsApplied-before.EventsApplied, d.EventsRejected-before.EventsRejected; a != 5 || r != 2 {
			t.Fatalf("EventsApplied +%d, EventsRejected +%d, want +5, +2", a, r)
		}
	}},
	{"unknown_parent_rejected", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		p := Seqs(1, 10)
		x.store(W(1), p, 0, 3)
		x.reject(p.StoreEvent(W(1), 4, 10, 0), flash.ErrUnknownParent)
		x.reject(p.StoreEvent(W(2), 3, 10, 0), flash.ErrUnknownParent) // parent held by another worker only
		x.expect(p, map[flash.Worker]int{W(1): 3})
		x.blocks(W(1), 3)
		x.blocks(W(2), 0)
		// The rest of the chain was not applied: filling the gap shows it.
		x.store(W(1), p, 3, 4)
		x.expect(p, map[flash.Worker]int{W(1): 4})
	}},
	{"duplicate_store_idempotent", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		p := Seqs(1, 10)
		x.store(W(1), p, 0, 10)
		x.idx.Flush()
		before := x.idx.Stats()
		x.store(W(1), p, 0, 10)
		x.store(W(1), p, 3, 7)
		x.idx.Flush()
		if got := x.idx.Stats().BlocksDuplicate - before.BlocksDuplicate; got != 14 {
			t.Fatalf("BlocksDuplicate +%d, want +14", got)
		}
		x.blocks(W(1), 10)
		x.expect(p, map[flash.Worker]int{W(1): 10})
		x.remove(W(1), p.Hash(5, 0)) // a set, not a count: one remove removes it
		x.expect(p, map[flash.Worker]int{W(1): 5})
	}},
	{"hash_conflict_rejected", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		p := Seqs(1, 10)
		x.store(W(1), p, 0, 10)
		// The hash of block 2 again at position 6, with more blocks after it.
		ev := flash.StoredEvent(W(1), flash.Block{Hash: p.Hash(2, 0), Local: p[2]}, flash.Block{Hash: 999, Local: L(999)}).WithParent(p.Hash(5, 0))
		x.reject(ev, flash.ErrHashConflict)
		// The same hash twice in one batch.
		q := Seqs(2, 3)
		x.reject(flash.StoredEvent(W(2), flash.Block{Hash: 7, Local: q[0]}, flash.Block{Hash: 7, Local: q[1]}), flash.ErrHashConflict)
		// The same hash at the same position with other content.
		x.reject(flash.StoredEvent(W(1), flash.Block{Hash: p.Hash(0, 0), Local: L(4242)}), flash.ErrHashConflict)
		x.blocks(W(1), 10)
		x.blocks(W(2), 0)
		x.expect(p, map[flash.Worker]int{W(1): 10})
		x.expect(Concat(p[:6], Prompt{p[2], L(999)}), map[flash.Worker]int{W(1): 6})
	}},
	{"rejected_batch_keeps_no_ids", func(t testing.TB, f Factory) {
		// A batch of a known worker rejected at its last block, after new
		// engine ids: none of them stays; the same ids store afterwards.
		x := newFixture(t, f, cfg())
		p := Seqs(1, 5)
		x.store(W(1), p, 0, 5)
		q := Seqs(2, 3)
		b := []flash.Block{{Hash: 100, Local: q[0]}, {Hash: 101, Local: q[1]}, {Hash: p.Hash(1, 0), Local: q[2]}}
		x.reject(flash.StoredEvent(W(1), b...).WithParent(p.Hash(4, 0)), flash.ErrHashConflict)
		x.blocks(W(1), 5)
		x.apply(flash.StoredEvent(W(1), b[:2]...).WithParent(p.Hash(4, 0)))
		x.blocks(W(1), 7)
		x.expect(Concat(p, q[:2]), map[flash.Worker]int{W(1): 7})
		x.remove(W(1), 101, 100)
		x.blocks(W(1), 5)
		x.expect(Concat(p, q[:2]), map[flash.Worker]int{W(1): 5})
		// Rejected at its first block (an engine id held at another
		// place), with new ids after it: none of them stays either.
		r := Seqs(3, 2)
		c := []flash.Block{{Hash: p.Hash(1, 0), Local: L(77)}, {Hash: 102, Local: r[0]}, {Hash: 103, Local: r[1]}}
		x.reject(flash.StoredEvent(W(1), c...), flash.ErrHashConflict)
		x.blocks(W(1), 5)
		x.apply(flash.StoredEvent(W(1), c[1:]...))
		x.blocks(W(1), 7)
		x.expect(r, map[flash.Worker]int{W(1): 2})
	}},
	{"repeat_in_large_batch_rejected", func(t testing.TB, f Factory) {
		// Batches of every size class an index may treat apart, each with
		// one engine id twice (first and last, adjacent, near the end), then
		// the batch without the repeat.
		x := newFixture(t, f, cfg())
		for k, n := range []int{17, 100, 256, 257, 700} {
			w := W(uint64(10 + k))
			p := Seqs(uint64(100+n), n)
			for _, pair := range [][2]int{{0, n - 1}, {n / 2, n/2 + 1}, {n - 3, n - 2}} {
				b := p.Blocks(0, n, 0)
				b[pair[1]].Hash = b[pair[0]].Hash
				x.reject(flash.StoredEvent(w, b...), flash.ErrHashConflict)
			}
			x.blocks(w, 0)
			x.apply(flash.StoredEvent(w, p.Blocks(0, n, 0)...))
			x.blocks(w, n)
			x.expect(p, map[flash.Worker]int{w: n})
		}
	}},
	{"salted_duplicate_content", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		p := Seqs(1, 6)
		x.store(W(1), p, 0, 6)
		x.apply(p.StoreEvent(W(1), 3, 6, 0)) // parent salt 0, same hashes: duplicates
		// Blocks 3..5 again under other engine ids (salt 1), same content.
		salted := flash.StoredEvent(W(1), p.Blocks(3, 6, 1)...).WithParent(p.Hash(2, 0))
		x.apply(salted)
		x.blocks(W(1), 9)
		x.remove(W(1), p.Hash(4, 0))
		x.expect(p, map[flash.Worker]int{W(1): 6})
		x.remove(W(1), p.Hash(4, 1))
		x.expect(p, map[flash.Worker]int{W(1): 4})
		x.store(W(1), p, 4, 5)
		x.expect(p, map[flash.Worker]int{W(1): 6})
	}},
	{"cleared_scoped_to_rank", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		p := Seqs(1, 12)
		r0, r1 := flash.Worker{ID: 1, DPRank: 0}, flash.Worker{ID: 1, DPRank: 1}
		x.store(r0, p, 0, 12)
		x.store(r1, p, 0, 7)
		x.store(W(2), p, 0, 3)
		x.apply(flash.ClearedEvent(r0))
		x.expect(p, map[flash.Worker]int{r1: 7, W(2): 3})
		x.blocks(r0, 0)
		x.blocks(r1, 7)
		x.store(r0, p, 0, 2) // a cleared rank stores again
		x.expect(p, map[flash.Worker]int{r0: 2, r1: 7, W(2): 3})
		x.apply(flash.ClearedEvent(W(99))) // unknown worker: nothing to do
	}},
	{"remove_worker_all_ranks", func(t testing.TB, f Factory) {
		c := cfg()
		c.MaxWorkers = 4
		x := newFixture(t, f, c)
		p := Seqs(1, 12)
		x.store(flash.Worker{ID: 1, DPRank: 0}, p, 0, 12)
		x.store(flash.Worker{ID: 1, DPRank: 3}, p, 0, 5)
		x.store(W(2), p, 0, 4)
		x.store(W(3), p, 0, 2)
		x.reject(p.StoreEvent(W(4), 0, 1, 0), flash.ErrTooManyWorkers)
		if err := x.idx.RemoveWorker(1); err != nil {
			t.Fatal(err)
		}
		x.expect(p, map[flash.Worker]int{W(2): 4, W(3): 2})
		x.blocks(flash.Worker{ID: 1, DPRank: 3}, 0)
		// The freed slots are reused.
		x.store(W(4), p, 0, 9)
		x.store(W(5), p, 0, 1)
		x.expect(p, map[flash.Worker]int{W(2): 4, W(3): 2, W(4): 9, W(5): 1})
		x.reject(p.StoreEvent(W(6), 0, 1, 0), flash.ErrTooManyWorkers)
		// A removed worker that comes back starts empty.
		if err := x.idx.RemoveWorker(2); err != nil {
			t.Fatal(err)
		}
		x.reject(p.StoreEvent(W(2), 4, 6, 0), flash.ErrUnknownParent)
		x.store(W(2), p, 0, 1)
		x.expect(p, map[flash.Worker]int{W(2): 1, W(3): 2, W(4): 9, W(5): 1})
	}},
	{"add_worker_ahead", func(t testing.TB, f Factory) {
		c := cfg()
		c.MaxWorkers = 3
		x := newFixture(t, f, c)
		a, ok := x.idx.(flash.WorkerAdder)
		if !ok {
			t.Skip("not a WorkerAdder")
		}
		add := func(w flash.Worker, want error) {
			t.Helper()
			before := x.idx.Stats()
			err := a.AddWorker(w)
			if !errors.Is(err, want) {
				t.Fatalf("AddWorker(%v) = %v, want %v", w, err, want)
			}
			after := x.idx.Stats()
			k, _ := model.RejectCounter(want)
			if want != nil && (after.EventsRejected != before.EventsRejected+1 || counterOf(after, k) != counterOf(before, k)+1) {
				t.Fatalf("AddWorker(%v) = %v, not counted as a rejection", w, err)
			}
			if want == nil && after.EventsRejected != before.EventsRejected {
				t.Fatalf("AddWorker(%v) accepted but counted as a rejection", w)
			}
		}
		p := Seqs(1, 8)
		add(W(1), nil)
		add(flash.Worker{ID: 1, DPRank: 2}, nil)
		add(W(1), nil) // again: nothing changes
		x.expect(p, map[flash.Worker]int{})
		x.blocks(W(1), 0)
		// A declared worker holds nothing: its first event has no parent.
		x.reject(p.StoreEvent(W(1), 2, 4, 0), flash.ErrUnknownParent)
		x.store(W(1), p, 0, 5)
		x.store(W(2), p, 0, 3) // the last slot
		x.expect(p, map[flash.Worker]int{W(1): 5, W(2): 3})
		// Declared workers hold their slots.
		add(W(3), flash.ErrTooManyWorkers)
		x.reject(p.StoreEvent(W(3), 0, 1, 0), flash.ErrTooManyWorkers)
		x.store(flash.Worker{ID: 1, DPRank: 2}, p, 0, 2)
		x.expect(p, map[flash.Worker]int{W(1): 5, {ID: 1, DPRank: 2}: 2, W(2): 3})
		// A removed worker frees its slots for new ones, declared or not
		// (once applied: with writers, the removal is ordered with worker
		// 1's events only).
		if err := x.idx.RemoveWorker(1); err != nil {
			t.Fatal(err)
		}
		x.idx.Flush()
		add(W(3), nil)
		x.store(W(4), p, 0, 7)
		x.reject(p.StoreEvent(W(5), 0, 1, 0), flash.ErrTooManyWorkers)
		x.apply(flash.ClearedEvent(W(3))) // a declared worker clears: nothing to do
		x.store(W(3), p, 0, 1)
		x.expect(p, map[flash.Worker]int{W(2): 3, W(3): 1, W(4): 7})
		if err := x.idx.Close(); err != nil {
			t.Fatal(err)
		}
		add(W(9), flash.ErrClosed)
	}},
	{"lora_does_not_match_base", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		tokens := make([]uint32, 64)
		for i := range tokens {
			tokens[i] = uint32(i * 7)
		}
		base, lora := flash.NewTokenHasher(16, ""), flash.NewTokenHasher(16, "adapter-a")
		pb := Prompt(base.LocalHashes(nil, tokens))
		pl := Prompt(lora.LocalHashes(nil, tokens))
		x.store(W(1), pb, 0, 4)
		x.store(W(2), pl, 0, 4)
		x.expect(pb, map[flash.Worker]int{W(1): 4})
		x.expect(pl, map[flash.Worker]int{W(2): 4})
	}},
	{"diverge_then_same_chunk", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		// A templated prompt: one block (a date) differs, the rest is equal.
		stored := Seqs(1, 300)
		query := append(Prompt{}, stored...)
		query[3] = L(777)
		x.store(W(1), stored, 0, 300)
		x.expect(query, map[flash.Worker]int{W(1): 3})
		// W(1) also holds the diverging chunk at the same position under
		// another prefix: an index that matches (position, chunk) without the
		// prefix would now see W(1) all the way through.
		other := Concat(Seqs(9, 3), Prompt{L(777)}, Seqs(10, 5))
		x.store(W(1), other, 0, len(other))
		x.expect(query, map[flash.Worker]int{W(1): 3})
		// Another worker holds the query's own chain: both chains now share
		// chunks at the same positions (a multi-entry).
		x.store(W(2), query, 0, 300)
		x.expect(query, map[flash.Worker]int{W(1): 3, W(2): 300})
		x.expect(stored, map[flash.Worker]int{W(1): 300, W(2): 3})
		q2 := append(Prompt{}, stored...)
		q2[200] = L(888)
		x.expect(q2, map[flash.Worker]int{W(1): 200, W(2): 3})
		x.remove(W(1), stored.Hash(250, 0))
		x.expect(stored, map[flash.Worker]int{W(1): 250, W(2): 3})
		x.expect(query, map[flash.Worker]int{W(1): 3, W(2): 300})
	}},
	{"equal_size_different_members", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		p := Seqs(1, 400)
		// Every checkpoint a jump search may use sees a set of the active
		// set's size with other members: W(4) holds the later blocks but not
		// position 0, W(3) stops early.
		x.store(W(1), p, 0, 400)
		x.store(W(3), p, 0, 1)
		x.store(W(4), p, 0, 400)
		x.remove(W(4), p.Hash(0, 0))
		x.expect(p, map[flash.Worker]int{W(1): 400, W(3): 1})
		for _, stop := range []int{2, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 399} {
			x.apply(flash.ClearedEvent(W(3)))
			x.store(W(3), p, 0, stop)
			x.expect(p, map[flash.Worker]int{W(1): 400, W(3): stop})
		}
	}},
	{"jump_boundaries", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		lengths := []int{1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 96, 127, 128, 129, 192, 255, 256, 257, 384, 511, 512, 513}
		p := Seqs(1, 600)
		want := map[flash.Worker]int{}
		for i, n := range lengths {
			x.store(W(uint64(i)), p, 0, n)
			want[W(uint64(i))] = n
		}
		x.expect(p, want)
		for _, qn := range []int{1, 16, 17, 32, 33, 64, 65, 128, 129, 256, 257, 512, 513} {
			w := map[flash.Worker]int{}
			for k, v := range want {
				w[k] = min(v, qn)
			}
			x.expect(p[:qn], w)
		}
	}},
	{"long_chain_10000", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		p := Seqs(1, 10000)
		x.store(W(1), p, 0, 10000)
		x.store(W(2), p, 0, 5000)
		x.store(W(3), p, 0, 9999)
		x.store(W(4), p, 0, 10000)
		x.remove(W(4), p.Hash(7777, 0))
		x.expect(p, map[flash.Worker]int{W(1): 10000, W(2): 5000, W(3): 9999, W(4): 7777})
		x.expect(Concat(p, Seqs(2, 10)), map[flash.Worker]int{W(1): 10000, W(2): 5000, W(3): 9999, W(4): 7777})
	}},
	{"empty_query", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		x.store(W(1), Seqs(1, 4), 0, 4)
		x.expect(Prompt{}, map[flash.Worker]int{})
		x.expect(nil, map[flash.Worker]int{})
	}},
	{"empty_index", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		x.expect(Seqs(1, 40), map[flash.Worker]int{})
		x.blocks(W(1), 0)
	}},
	{"query_longer_than_stored", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		p := Seqs(1, 2000)
		x.store(W(1), p, 0, 3)
		x.store(W(2), p, 0, 1000)
		x.expect(p, map[flash.Worker]int{W(1): 3, W(2): 1000})
	}},
	{"local_hash_zero", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		p := Prompt{0, L(1), 0, 0, L(2), 0}
		x.store(W(1), p, 0, 6)
		x.store(W(2), p, 0, 3)
		x.expect(p, map[flash.Worker]int{W(1): 6, W(2): 3})
		x.expect(Prompt{0, 0}, map[flash.Worker]int{W(1): 1, W(2): 1})
		x.expect(Prompt{L(1)}, map[flash.Worker]int{})
	}},
	{"workers_over_64", func(t testing.TB, f Factory) {
		manyWorkers(t, f, 130)
	}},
	{"workers_over_1000", func(t testing.TB, f Factory) {
		manyWorkers(t, f, 1100)
	}},
	{"malformed_events_rejected", func(t testing.TB, f Factory) {
		c := cfg()
		c.MaxDepth = 64
		c.MaxBatch = 40
		x := newFixture(t, f, c)
		p := Seqs(1, 100)
		x.reject(flash.StoredEvent(W(1)), flash.ErrEmptyEvent)
		x.reject(flash.RemovedEvent(W(1)), flash.ErrEmptyEvent)
		x.reject(flash.Event{Kind: 0, Worker: W(1)}, flash.ErrBadKind)
		x.reject(flash.Event{Kind: 200, Worker: W(1)}, flash.ErrBadKind)
		x.reject(p.StoreEvent(W(1), 0, 41, 0), flash.ErrBatchTooLarge)
		x.store(W(1), p, 0, 40)
		x.reject(p.StoreEvent(W(1), 40, 65, 0), flash.ErrTooDeep)
		x.store(W(1), p, 40, 64)
		x.reject(p.StoreEvent(W(1), 64, 65, 0), flash.ErrTooDeep)
		x.expect(p, map[flash.Worker]int{W(1): 64})
		x.blocks(W(1), 64)
	}},
	{"closed", func(t testing.TB, f Factory) {
		x := newFixture(t, f, cfg())
		p := Seqs(1, 4)
		x.store(W(1), p, 0, 4)
		if err := x.idx.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := x.idx.Apply(p.StoreEvent(W(2), 0, 4, 0)); err == nil {
			t.Fatalf("Apply after Close: nil error, want ErrClosed")
		}
		if err := x.idx.RemoveWorker(1); err == nil {
			t.Fatalf("RemoveWorker after Close: nil error, want ErrClosed")
		}
		if err := x.idx.Close(); err == nil {
			t.Fatalf("second Close: nil error, want ErrClosed")
		}
		x.expect(p, map[flash.Worker]int{W(1): 4}) // reads still answer
		if s := x.idx.Stats(); s.RejectedClosed < 1 {
			t.Fatalf("RejectedClosed = %d, want >= 1", s.RejectedClosed)
		}
	}},
	{"crafted_content_collision", func(t testing.TB, f Factory) {
		// A local hash at position 0 is its sequence hash, so a caller
		// can craft one whose content mixes to the same word as a
		// content at position 1 (seq ^ rotl(pos·φ, 17)): the two stay
		// two contents, in a worker whose content map is in use (two
		// engine ids for one content).
		x := newFixture(t, f, cfg())
		ab := P(1, 2)
		l0 := Prompt{CollidingLocal(1, ab.Seq()[1])}
		x.store(W(1), ab, 0, 2)
		x.apply(ab.StoreEvent(W(1), 0, 2, 1))
		x.store(W(1), l0, 0, 1)
		x.expect(ab, map[flash.Worker]int{W(1): 2})
		x.expect(l0, map[flash.Worker]int{W(1): 1})
		x.blocks(W(1), 5) // engine ids: two for each of ab's blocks
		x.remove(W(1), l0.Hash(0, 0))
		x.expect(l0, nil)
		x.expect(ab, map[flash.Worker]int{W(1): 2})
		x.blocks(W(1), 4)
	}},
}

// CollidingLocal returns the local hash whose content at position 0 mixes
// to the same word as content (pos, seq) in a content map keyed by
// seq ^ rotl(pos·φ, 17): an input that a map comparing mixed words alone
// takes for that content.
func CollidingLocal(pos uint32, seq flash.SeqHash) flash.LocalHash {
	return flash.LocalHash(uint64(seq) ^ bits.RotateLeft64(uint64(pos)*0x9E3779B97F4A7C15, 17))
}

func manyWorkers(t testing.TB, f Factory, n int) {
	c := cfg()
	c.MaxWorkers = n + n%7
	x := newFixture(t, f, c)
	p := Seqs(1, 200)
	want := map[flash.Worker]int{}
	for i := 0; i < n; i++ {
		w := flash.Worker{ID: uint64(i / 2), DPRank: uint32(i % 2)}
		d := 1 + (i*37)%150
		x.store(w, p, 0, d)
		want[w] = d
	}
	x.expect(p, want)
	// Every third worker loses block 5.
	for i := 0; i < n; i += 3 {
		w := flash.Worker{ID: uint64(i / 2), DPRank: uint32(i % 2)}
		x.remove(w, p.Hash(5, 0))
		want[w] = min(want[w], 5)
	}
	x.expect(p, want)
}

// recorder turns a failure into a panic that Check recovers.
type recorder struct {
	testing.TB
	msg string
}

type caseFailed struct{}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(caseFailed{})
}
func (r *recorder) Errorf(format string, args ...any) { r.Fatalf(format, args...) }
func (r *recorder) Fatal(args ...any)                 { r.Fatalf("%s", fmt.Sprint(args...)) }

// Check runs the named case against f and returns its first failure, or ""
// when it passes. It lets a backend's tests show that a case it skips really
// fails for it.
func Check(tb testing.TB, name string, f Factory) (failure string) {
	for _, c := range cases {
		if c.name != name {
			continue
		}
		r := &recorder{TB: tb}
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(caseFailed); !ok {
					panic(v)
				}
				failure = r.msg
			}
		}()
		c.run(r, f)
		return ""
	}
	tb.Fatalf("flashtest: no case %q", name)
	return ""
}
