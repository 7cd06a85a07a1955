package flashtest

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/flash"
)

// Tier numbers of the tier cases' indexes (tieredConfig).
const (
	gpu  flash.Tier = 0
	cpu  flash.Tier = 1
	disk flash.Tier = 2
)

// tieredConfig is the default config with n tiers: GPU, CPU, DISK.
func tieredConfig(n int) flash.Config {
	c := cfg()
	c.Tiers = []flash.TierSpec{{Name: "GPU"}, {Name: "CPU"}, {Name: "DISK"}}[:n]
	return c
}

// TierCases are the names of the cases about tiers (a subset of Cases):
// a backend that keeps one tier skips them.
var TierCases = map[string]string{}

func init() {
	for _, c := range tierCases {
		TierCases[c.name] = "keeps one tier"
	}
	TierCases["tiers_random_differential"] = "keeps one tier"
}

// storeIn stores blocks [from, to) of p on w in tier t.
func (x *fixture) storeIn(w flash.Worker, t flash.Tier, p Prompt, from, to int) {
	x.t.Helper()
	x.apply(p.StoreEvent(w, from, to, 0).InTier(t))
}

// removeIn takes blocks [from, to) of p from tier t of w.
func (x *fixture) removeIn(w flash.Worker, t flash.Tier, p Prompt, from, to int) {
	x.t.Helper()
	hs := make([]flash.ExternalHash, 0, to-from)
	for i := from; i < to; i++ {
		hs = append(hs, p.Hash(i, 0))
	}
	x.apply(flash.RemovedEvent(w, hs...).InTier(t))
}

// expectTiers checks each worker's depth per tier for p (want[w] =
// TierDepth[:n] of an index of n tiers; a worker of no depth is absent),
// asked with and without sequence hashes.
func (x *fixture) expectTiers(p Prompt, want map[flash.Worker][]int) {
	x.t.Helper()
	bothForms(p, func(q flash.Query, withSeq bool) {
		x.t.Helper()
		x.find(q)
		got := map[flash.Worker][]int{}
		for _, m := range x.sc.Matches {
			var ds []int
			for _, d := range m.TierDepth[:len(x.tiers)] {
				ds = append(ds, int(d))
			}
			got[m.Worker] = ds
		}
		ok := len(got) == len(want)
		for w, ds := range want {
			ok = ok && slices.Equal(got[w], ds)
		}
		if !ok {
			x.t.Fatalf("query of %d blocks (seqs=%v): tier depths %v, want %v", len(p), withSeq, got, want)
		}
	})
}

var tierCases = []testCase{
	{"tiers_offload_then_evict", func(t testing.TB, f Factory) {
		// The engine copies its blocks to CPU memory, then evicts from
		// the GPU: leaves first, then the chain's root.
		x := newFixture(t, f, tieredConfig(2))
		p := Seqs(1, 8)
		x.storeIn(W(1), gpu, p, 0, 8)
		x.expectTiers(p, map[flash.Worker][]int{W(1): {8, 8}})
		x.storeIn(W(1), cpu, p, 0, 8)
		x.expectTiers(p, map[flash.Worker][]int{W(1): {8, 8}})
		x.removeIn(W(1), gpu, p, 5, 8)
		x.expectTiers(p, map[flash.Worker][]int{W(1): {5, 8}})
		x.removeIn(W(1), gpu, p, 0, 1)
		x.expectTiers(p, map[flash.Worker][]int{W(1): {0, 8}})
		x.blocks(W(1), 8)
		// Loaded back to the GPU: the held blocks below count again.
		x.storeIn(W(1), gpu, p, 0, 1)
		x.expectTiers(p, map[flash.Worker][]int{W(1): {5, 8}})
		x.removeIn(W(1), cpu, p, 0, 8)
		x.expectTiers(p, map[flash.Worker][]int{W(1): {5, 5}})
		x.blocks(W(1), 5)
	}},
	{"tiers_chain_split", func(t testing.TB, f Factory) {
		// One chain over three tiers, each batch under the last
		// block of the one before.
		x := newFixture(t, f, tieredConfig(3))
		p := Seqs(2, 12)
		x.storeIn(W(1), gpu, p, 0, 4)
		x.storeIn(W(1), cpu, p, 4, 8)
		x.storeIn(W(1), disk, p, 8, 12)
		x.storeIn(W(2), disk, p, 0, 6)
		x.expectTiers(p, map[flash.Worker][]int{W(1): {4, 8, 12}, W(2): {0, 0, 6}})
		x.expectTiers(p[:6], map[flash.Worker][]int{W(1): {4, 6, 6}, W(2): {0, 0, 6}})
		// A faster tier below a slower one counts where the slower does.
		x.storeIn(W(1), gpu, p, 8, 10)
		x.expectTiers(p, map[flash.Worker][]int{W(1): {4, 10, 12}, W(2): {0, 0, 6}})
		x.storeIn(W(1), gpu, p, 4, 8)
		x.expectTiers(p, map[flash.Worker][]int{W(1): {10, 10, 12}, W(2): {0, 0, 6}})
	}},
	{"tiers_parent_only_on_cpu", func(t testing.TB, f Factory) {
		// The parent is found in another tier than its child's.
		x := newFixture(t, f, tieredConfig(2))
		p := Seqs(3, 8)
		x.storeIn(W(1), cpu, p, 0, 4)
		x.storeIn(W(1), gpu, p, 4, 8)
		x.expectTiers(p, map[flash.Worker][]int{W(1): {0, 8}})
		x.storeIn(W(1), gpu, p, 0, 4)
		x.expectTiers(p, map[flash.Worker][]int{W(1): {8, 8}})
		x.removeIn(W(1), cpu, p, 0, 4)
		x.expectTiers(p, map[flash.Worker][]int{W(1): {8, 8}})
		x.removeIn(W(1), gpu, p, 2, 3)
		x.expectTiers(p, map[flash.Worker][]int{W(1): {2, 2}})
		x.blocks(W(1), 7)
		// A parent that left every tier is unknown.
		x.reject(p.StoreEvent(W(1), 3, 4, 0).InTier(cpu), flash.ErrUnknownParent)
	}},
	{"tiers_removed_from_one_of_two", func(t testing.TB, f Factory) {
		x := newFixture(t, f, tieredConfig(2))
		p := Seqs(4, 6)
		x.storeIn(W(1), gpu, p, 0, 6)
		x.storeIn(W(1), cpu, p, 0, 6)
		before := x.stats()
		x.removeIn(W(1), cpu, p, 0, 6)
		x.expectTiers(p, map[flash.Worker][]int{W(1): {6, 6}})
		x.blocks(W(1), 6)
		// Removed again from CPU: held, but not there: skipped, counted.
		x.removeIn(W(1), cpu, p, 0, 2)
		after := x.stats()
		if after.BlocksRemoved-before.BlocksRemoved != 6 || after.RemovesUnknown-before.RemovesUnknown != 2 {
			t.Fatalf("removed %d, unknown %d: want 6 and 2", after.BlocksRemoved-before.BlocksRemoved, after.RemovesUnknown-before.RemovesUnknown)
		}
		x.removeIn(W(1), gpu, p, 0, 6)
		x.expectTiers(p, map[flash.Worker][]int{})
		x.blocks(W(1), 0)
	}},
	{"tiers_stored_counts", func(t testing.TB, f Factory) {
		// A block stored in a tier it is in is a duplicate; in a new
		// tier, stored.
		x := newFixture(t, f, tieredConfig(2))
		p := Seqs(5, 4)
		before := x.stats()
		x.storeIn(W(1), gpu, p, 0, 4)
		x.storeIn(W(1), gpu, p, 0, 4)
		x.storeIn(W(1), cpu, p, 0, 4)
		after := x.stats()
		if after.BlocksStored-before.BlocksStored != 8 || after.BlocksDuplicate-before.BlocksDuplicate != 4 {
			t.Fatalf("stored %d, duplicate %d: want 8 and 4", after.BlocksStored-before.BlocksStored, after.BlocksDuplicate-before.BlocksDuplicate)
		}
		x.blocks(W(1), 4)
		// The same engine id names one content in every tier.
		q := Seqs(6, 4)
		ev := q.StoreEvent(W(1), 0, 1, 0).InTier(cpu)
		ev.Blocks[0].Hash = p.Hash(0, 0)
		x.reject(ev, flash.ErrHashConflict)
	}},
	{"tiers_cleared", func(t testing.TB, f Factory) {
		x := newFixture(t, f, tieredConfig(3))
		p := Seqs(7, 6)
		x.storeIn(W(1), gpu, p, 0, 6)
		x.storeIn(W(1), cpu, p, 0, 3)
		x.storeIn(W(1), disk, p, 0, 6)
		x.storeIn(W(2), cpu, p, 0, 6)
		x.apply(flash.ClearedEvent(W(1)).InTier(gpu))
		x.expectTiers(p, map[flash.Worker][]int{W(1): {0, 3, 6}, W(2): {0, 6, 6}})
		x.blocks(W(1), 6)
		x.apply(flash.ClearedEvent(W(1)).InTier(disk))
		x.expectTiers(p, map[flash.Worker][]int{W(1): {0, 3, 3}, W(2): {0, 6, 6}})
		x.blocks(W(1), 3)
		x.storeIn(W(1), gpu, p, 0, 2)
		x.apply(flash.ClearedEvent(W(1)))
		x.expectTiers(p, map[flash.Worker][]int{W(2): {0, 6, 6}})
		x.blocks(W(1), 0)
		x.storeIn(W(1), disk, p, 0, 6)
		x.expectTiers(p, map[flash.Worker][]int{W(1): {0, 0, 6}, W(2): {0, 6, 6}})
	}},
	{"tiers_remove_worker", func(t testing.TB, f Factory) {
		c := tieredConfig(2)
		c.MaxWorkers = 2
		x := newFixture(t, f, c)
		p := Seqs(8, 5)
		x.storeIn(W(1), cpu, p, 0, 5)
		x.storeIn(W(2), gpu, p, 0, 3)
		if err := x.idx.RemoveWorker(1); err != nil {
			t.Fatal(err)
		}
		x.expectTiers(p, map[flash.Worker][]int{W(2): {3, 3}})
		// The slot's next worker holds nothing of its last one's.
		x.storeIn(W(3), gpu, p, 0, 1)
		x.expectTiers(p, map[flash.Worker][]int{W(2): {3, 3}, W(3): {1, 1}})
		x.blocks(W(1), 0)
	}},
	{"tiers_bad_tier", func(t testing.TB, f Factory) {
		x := newFixture(t, f, tieredConfig(2))
		p := Seqs(9, 3)
		x.storeIn(W(1), cpu, p, 0, 3)
		x.reject(p.StoreEvent(W(1), 0, 3, 0).InTier(2), flash.ErrBadTier)
		x.reject(flash.RemovedEvent(W(1), p.Hash(0, 0)).InTier(7), flash.ErrBadTier)
		x.reject(flash.ClearedEvent(W(1)).InTier(2), flash.ErrBadTier)
		x.expectTiers(p, map[flash.Worker][]int{W(1): {0, 3}})
		// An index of one tier has the GPU only.
		y := newFixture(t, f, cfg())
		y.reject(p.StoreEvent(W(1), 0, 3, 0).InTier(cpu), flash.ErrBadTier)
		y.store(W(1), p, 0, 3)
		y.expect(p, map[flash.Worker]int{W(1): 3})
		// A result that held a tiered index's answers, reused for an
		// index of one tier, holds no slower tier's depth.
		y.sc = x.sc
		y.expect(p, map[flash.Worker]int{W(1): 3})
	}},
	{"tiers_predicted_fastest", func(t testing.TB, f Factory) {
		// A prediction counts in the fastest tier: the request computes
		// its blocks on the GPU.
		clk := &clock{}
		c := clk.config(100)
		c.Tiers = tieredConfig(2).Tiers
		x := newFixture(t, f, c)
		pr, ok := x.idx.(flash.Predictor)
		if !ok {
			t.Skip("the backend records no predictions")
		}
		p := Seqs(10, 8)
		x.storeIn(W(1), cpu, p, 0, 6)
		if err := pr.Predict(W(1), flash.Query{Locals: p[:3]}, time.Second); err != nil {
			t.Fatal(err)
		}
		x.expectTiers(p, map[flash.Worker][]int{W(1): {3, 6}})
		if m := x.sc.Matches[0]; m.Depth != 6 || m.Predicted != 0 {
			t.Fatalf("match %+v: want depth 6, none of it predicted", m)
		}
		if err := pr.Predict(W(1), flash.Query{Locals: p}, time.Second); err != nil {
			t.Fatal(err)
		}
		x.expectTiers(p, map[flash.Worker][]int{W(1): {8, 8}})
		if m := x.sc.Matches[0]; m.Depth != 8 || m.Predicted != 2 {
			t.Fatalf("match %+v: want depth 8, 2 of it predicted", m)
		}
	}},
	{"tiers_best", func(t testing.TB, f Factory) {
		// Best weighs each tier's blocks: 4 on the GPU (4) beat 5 in
		// CPU memory (3.75) and lose to 6 there (4.5).
		x := newFixture(t, f, tieredConfig(2))
		p := Seqs(11, 8)
		x.storeIn(W(1), gpu, p, 0, 4)
		x.storeIn(W(2), cpu, p, 0, 5)
		x.find(flash.Query{Locals: p})
		if b, _ := x.sc.Best(); b.Worker != W(1) {
			t.Fatalf("Best = %v, want the GPU's 4 blocks (worker 1)", b.Worker)
		}
		x.storeIn(W(2), cpu, p, 5, 6)
		x.find(flash.Query{Locals: p})
		if b, _ := x.sc.Best(); b.Worker != W(2) {
			t.Fatalf("Best = %v, want the CPU's 6 blocks (worker 2)", b.Worker)
		}
		// Weights of one's own: the CPU's blocks worth a tenth.
		y := newFixture(t, f, flash.Config{Tiers: []flash.TierSpec{{Name: "GPU", Weight: 1}, {Name: "CPU", Weight: 0.1}}})
		y.storeIn(W(1), gpu, p, 0, 1)
		y.storeIn(W(2), cpu, p, 0, 8)
		y.find(flash.Query{Locals: p})
		if b, _ := y.sc.Best(); b.Worker != W(1) {
			t.Fatalf("Best = %v, want worker 1 (1 against 0.8)", b.Worker)
		}
	}},
	{"tiers_snapshot", func(t testing.TB, f Factory) {
		// A snapshot keeps every engine id's tiers.
		x := newFixture(t, f, tieredConfig(3))
		src, ok := x.idx.(snapshotter)
		if !ok {
			t.Skip("the backend writes no snapshots")
		}
		p := Seqs(12, 9)
		x.storeIn(W(1), cpu, p, 0, 6)
		x.storeIn(W(1), gpu, p, 3, 9)
		x.storeIn(W(1), disk, p, 0, 2)
		x.removeIn(W(1), cpu, p, 1, 2)
		x.storeIn(W(2), disk, p, 0, 4)
		want := map[flash.Worker][]int{W(1): {0, 1, 9}, W(2): {0, 0, 4}}
		x.expectTiers(p, want)
		x.blocks(W(1), 9)
		var b bytes.Buffer
		if _, err := src.Dump(&b); err != nil {
			t.Fatal(err)
		}
		y := newFixture(t, f, tieredConfig(3))
		if err := y.idx.(snapshotter).Restore(bytes.NewReader(b.Bytes())); err != nil {
			t.Fatalf("Restore of a tiered snapshot: %v", err)
		}
		y.expectTiers(p, want)
		y.removeIn(W(1), disk, p, 0, 2)
		y.expectTiers(p, map[flash.Worker][]int{W(1): {0, 1, 1}, W(2): {0, 0, 4}})
		y.blocks(W(1), 8)
		// An index of fewer tiers refuses it.
		z := newFixture(t, f, tieredConfig(2))
		if err := z.idx.(snapshotter).Restore(bytes.NewReader(b.Bytes())); err == nil {
			t.Fatal("a snapshot of three tiers restored into an index of two")
		}
	}},
}

// stats flushes and returns the index's counters.
func (x *fixture) stats() flash.Stats {
	x.idx.Flush()
	return x.idx.Stats()
}
