package flash_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/flash"
)

// Normalize gives an index its tiers: the GPU alone by default, every
// weight set, at most MaxTiers, the caller's slice left as it was.
func TestConfig_NormalizeTiers(t *testing.T) {
	if got := (flash.Config{}).Normalize().Tiers; !slices.Equal(got, flash.DefaultTiers) {
		t.Fatalf("default tiers %v", got)
	}
	in := []flash.TierSpec{{Name: "GPU"}, {Name: "CPU", Weight: 0.9}, {Name: "DISK", Weight: math.NaN()}}
	got := flash.Config{Tiers: in}.Normalize().Tiers
	want := []flash.TierSpec{{Name: "GPU", Weight: 1}, {Name: "CPU", Weight: 0.9}, {Name: "DISK", Weight: 0.5}}
	if !slices.Equal(got, want) || in[0].Weight != 0 {
		t.Fatalf("tiers %v (caller's now %v), want %v", got, in, want)
	}
	many := make([]flash.TierSpec, flash.MaxTiers+3)
	c := flash.Config{Tiers: many}.Normalize()
	if len(c.Tiers) != flash.MaxTiers || c.NumTiers() != flash.MaxTiers {
		t.Fatalf("%d tiers kept of %d", len(c.Tiers), len(many))
	}
	for tier, w := range []float64{1, 0.75, 0.5, 0.25} {
		if c.Tiers[tier].Weight != w || flash.DefaultTierWeight(flash.Tier(tier)) != w {
			t.Fatalf("tier %d weight %v, want %v", tier, c.Tiers[tier].Weight, w)
		}
	}
}

// A match's score weighs each tier's blocks; with one tier it is Depth, and
// Best ranks as it did before tiers.
func TestMatch_Score(t *testing.T) {
	tiers := flash.Config{Tiers: []flash.TierSpec{{Name: "GPU"}, {Name: "CPU"}, {Name: "DISK"}}}.Normalize().Tiers
	m := flash.Match{Depth: 10, TierDepth: [flash.MaxTiers]int32{2, 6, 10}}
	if got := m.Score(tiers); got != 2+0.75*4+0.5*4 {
		t.Fatalf("score %v, want 7", got)
	}
	if got := m.Score(tiers[:1]); got != 10 {
		t.Fatalf("one tier: score %v, want Depth", got)
	}
	sc := flash.Scores{Tiers: tiers, Matches: []flash.Match{
		m, // 7
		{Worker: flash.Worker{ID: 1}, Depth: 8, TierDepth: [flash.MaxTiers]int32{0, 8, 8}},   // 6
		{Worker: flash.Worker{ID: 2}, Depth: 7, TierDepth: [flash.MaxTiers]int32{7, 7, 7}},   // 7, fewer blocks
		{Worker: flash.Worker{ID: 3}, Depth: 12, TierDepth: [flash.MaxTiers]int32{0, 0, 12}}, // 6
	}}
	sc.Matches[0].Blocks, sc.Matches[2].Blocks = 5, 3
	if b, ok := sc.Best(); !ok || b.Worker.ID != 2 {
		t.Fatalf("Best %+v, want worker 2", b)
	}
	sc.Tiers = nil // one tier: the deepest
	if b, _ := sc.Best(); b.Worker.ID != 3 {
		t.Fatalf("Best by depth %+v, want worker 3", b)
	}
}

// The Flash indexer keeps its Config's tiers: an event naming a tier past
// them is rejected and counted, never folded into another, and its
// answers carry each tier's depth.
func TestFlash_Tiers(t *testing.T) {
	ix := flash.New(flash.WithConfig(flash.Config{Tiers: []flash.TierSpec{{Name: "GPU"}, {Name: "CPU"}}}), flash.WithWriters(0))
	defer ix.Close()
	if got := ix.Config().Tiers; len(got) != 2 || got[1].Name != "CPU" || got[1].Weight != 0.75 {
		t.Fatalf("tiers %v, want GPU and CPU", got)
	}
	w := flash.Worker{ID: 1}
	blocks := []flash.Block{{Hash: 1, Local: 10}, {Hash: 2, Local: 20}}
	for _, ev := range []flash.Event{
		flash.StoredEvent(w, blocks...).InTier(2),
		flash.RemovedEvent(w, 1).InTier(2),
		flash.ClearedEvent(w).InTier(5),
	} {
		if err := ix.Apply(ev); err != flash.ErrBadTier {
			t.Fatalf("%v in tier %d: %v, want ErrBadTier", ev.Kind, ev.Tier, err)
		}
	}
	if err := ix.Apply(flash.StoredEvent(w, blocks...).InTier(1)); err != nil {
		t.Fatal(err)
	}
	if err := ix.Apply(flash.StoredEvent(w, blocks[0])); err != nil {
		t.Fatal(err)
	}
	var sc flash.Scores
	ix.FindMatches(flash.Query{Locals: []flash.LocalHash{10, 20}}, &sc)
	want := flash.Match{Worker: w, Depth: 2, Tokens: 2 * flash.DefaultBlockSize, Blocks: 2, TierDepth: [flash.MaxTiers]int32{1, 2}}
	if len(sc.Matches) != 1 || sc.Matches[0] != want || len(sc.Tiers) != 2 {
		t.Fatalf("matches %+v (tiers %v), want %+v", sc.Matches, sc.Tiers, want)
	}
	if st := ix.Stats(); st.RejectedBadTier != 3 || st.EventsRejected != 3 || st.StoredRejected != 1 || st.ClearedRejected != 1 || st.BlocksStored != 3 {
		t.Fatalf("stats %+v: want 3 rejected with ErrBadTier, 3 blocks stored", st)
	}
}

// A query of an index of several tiers allocates nothing once its Scores
// has grown, with predictions held too (the joint search).
func TestFlash_TieredQueryNoAllocs(t *testing.T) {
	ix := flash.New(flash.WithWriters(0), flash.WithTiers(flash.TierSpec{Name: "GPU"}, flash.TierSpec{Name: "CPU"}, flash.TierSpec{Name: "DISK"}))
	defer ix.Close()
	locals := make([]flash.LocalHash, 64)
	for i := range locals {
		locals[i] = flash.LocalHash(i*7 + 1)
	}
	for w := range 40 {
		blocks := make([]flash.Block, 64)
		for i := range blocks {
			blocks[i] = flash.Block{Hash: flash.ExternalHash(i + 1), Local: locals[i]}
		}
		if err := ix.Apply(flash.StoredEvent(flash.Worker{ID: uint64(w)}, blocks[:w+10]...).InTier(flash.Tier(w % 3))); err != nil {
			t.Fatal(err)
		}
	}
	q := flash.Query{Locals: locals, Seqs: flash.ChainLocals(nil, locals)}
	var sc flash.Scores
	ix.FindMatches(q, &sc)
	if len(sc.Matches) != 40 {
		t.Fatalf("%d matches, want 40", len(sc.Matches))
	}
	if a := testing.AllocsPerRun(200, func() { ix.FindMatches(q, &sc) }); a != 0 {
		t.Fatalf("%v allocations a tiered query", a)
	}
	if err := ix.Predict(flash.Worker{ID: 99}, q, time.Hour); err != nil {
		t.Fatal(err)
	}
	ix.FindMatches(q, &sc)
	if a := testing.AllocsPerRun(200, func() { ix.FindMatches(q, &sc) }); a != 0 {
		t.Fatalf("%v allocations a tiered query with predictions", a)
	}
}
