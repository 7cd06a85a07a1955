package sim

import (
	"slices"
	"testing"

	"github.com/flashindexer/flashindexer/bench/trace"
	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/model"
)

func TestRecord_ConsistentEvents(t *testing.T) {
	reqs, err := trace.Load("")
	if err != nil {
		t.Fatal(err)
	}
	reqs = reqs[:2000]
	h, _ := trace.NewHasher(512)
	wl := Record(reqs, h, Config{Workers: 8, CacheBlocks: 512})
	if wl.Queries != 2000 || wl.Events == 0 || wl.RemovedBlocks == 0 || wl.HitBlocks == 0 {
		t.Fatalf("queries %d, events %d, removed %d, hits %d", wl.Queries, wl.Events, wl.RemovedBlocks, wl.HitBlocks)
	}
	// Every event the engines emit is accepted by the exact model: parents
	// exist, removes name cached blocks.
	m := model.New(flash.Config{MaxWorkers: 8})
	used := map[flash.Worker]bool{}
	for i, op := range wl.Ops {
		if i > 0 && op.T < wl.Ops[i-1].T {
			t.Fatal("ops out of order")
		}
		if op.Event == nil {
			continue
		}
		used[op.Event.Worker] = true
		if err := m.Apply(*op.Event); err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	if s := m.Stats(); s.RemovesUnknown != 0 || s.BlocksDuplicate != 0 {
		t.Fatalf("engines emitted unknown removes or duplicates: %+v", s)
	}
	for w, b := range used {
		if b && m.BlockCount(w) > 512 {
			t.Fatalf("worker %v holds %d blocks, cache is 512", w, m.BlockCount(w))
		}
	}
	if len(used) < 6 {
		t.Fatalf("the router used %d of 8 workers", len(used))
	}
}

// With caches that never evict and predictions that never expire, the
// router's predictions are exactly what the engines cache: routing on them
// (with or without events) makes every decision that routing on timely
// events makes. Events that never arrive lose hits; round-robin spreads
// evenly and finds fewer.
func TestRecord_Routes(t *testing.T) {
	reqs, err := trace.Load("")
	if err != nil {
		t.Fatal(err)
	}
	reqs = reqs[:1500]
	h, _ := trace.NewHasher(512)
	run := func(c Config) *Workload {
		c.Workers, c.Seed = 8, 3
		if c.CacheBlocks == 0 {
			c.CacheBlocks = 1 << 20
		}
		return Record(reqs, h, c)
	}
	events := run(Config{})
	predicted := run(Config{Route: RoutePredict, PredictTTL: 1 << 62})
	if events.HitBlocks != predicted.HitBlocks || !slices.Equal(events.PerWorker, predicted.PerWorker) {
		t.Errorf("predictions alone: %d hits %v; events: %d hits %v", predicted.HitBlocks, predicted.PerWorker, events.HitBlocks, events.PerWorker)
	}
	both := run(Config{Route: RouteEventsPredict, EventDelay: 1 << 62, PredictTTL: 1 << 62})
	if both.HitBlocks != events.HitBlocks {
		t.Errorf("events that never arrive, with predictions: %d hits, events on time %d", both.HitBlocks, events.HitBlocks)
	}
	late := run(Config{EventDelay: 1 << 62})
	if late.HitBlocks >= events.HitBlocks {
		t.Errorf("events that never arrive: %d hits, on time %d", late.HitBlocks, events.HitBlocks)
	}
	rr := run(Config{Route: RouteRoundRobin})
	for _, n := range rr.PerWorker {
		if n < len(reqs)/8 || n > len(reqs)/8+1 {
			t.Fatalf("round-robin sent %v", rr.PerWorker)
		}
	}
	if rr.Spread() > 1.01 || events.HitRate() <= rr.HitRate() {
		t.Errorf("round-robin: spread %.2f, hit rate %.3f; events %.3f", rr.Spread(), rr.HitRate(), events.HitRate())
	}
}

// With a CPU cache, the engines' events are exact in both tiers: the model
// with two tiers accepts every one (offloaded blocks' parents are held,
// removes name what the tier holds, nothing stored twice in a tier). A CPU
// cache saves prefill blocks, and routing on both tiers' depths finds more
// of them than routing on the GPU's alone.
func TestRecord_CPUTier(t *testing.T) {
	reqs, err := trace.Load("")
	if err != nil {
		t.Fatal(err)
	}
	reqs = reqs[:3000]
	h, _ := trace.NewHasher(512)
	cfg := Config{Workers: 8, CacheBlocks: 256, CPUBlocks: 2048, Seed: 1}
	gpuOnly := Record(reqs, h, cfg)
	cfg.TierAware = true
	aware := Record(reqs, h, cfg)
	noCPU := Record(reqs, h, Config{Workers: 8, CacheBlocks: 256, Seed: 1})
	if gpuOnly.Tiers != 2 || noCPU.Tiers != 1 || noCPU.CPUHitBlocks != 0 {
		t.Fatalf("tiers %d %d, CPU hits without a CPU cache %d", gpuOnly.Tiers, noCPU.Tiers, noCPU.CPUHitBlocks)
	}
	for _, wl := range []*Workload{gpuOnly, aware} {
		m := model.New(flash.Config{MaxWorkers: 8, Tiers: []flash.TierSpec{{Name: "GPU"}, {Name: "CPU"}}})
		for i, op := range wl.Ops {
			if op.Event == nil {
				continue
			}
			if err := m.Apply(*op.Event); err != nil {
				t.Fatalf("op %d (%v in tier %d): %v", i, op.Event.Kind, op.Event.Tier, err)
			}
		}
		if s := m.Stats(); s.RemovesUnknown != 0 || s.BlocksDuplicate != 0 {
			t.Fatalf("engines emitted unknown removes or duplicates: %+v", s)
		}
		if wl.CPUHitBlocks == 0 {
			t.Fatal("no block was found in a CPU cache")
		}
	}
	t.Logf("saved blocks: no CPU %d, GPU-only routing %d (%d from CPU), tier-aware %d (%d from CPU)",
		noCPU.SavedBlocks(), gpuOnly.SavedBlocks(), gpuOnly.CPUHitBlocks, aware.SavedBlocks(), aware.CPUHitBlocks)
	if gpuOnly.SavedBlocks() <= noCPU.SavedBlocks() || aware.SavedBlocks() <= gpuOnly.SavedBlocks() {
		t.Errorf("saved blocks: no CPU %d, GPU-only routing %d, tier-aware %d", noCPU.SavedBlocks(), gpuOnly.SavedBlocks(), aware.SavedBlocks())
	}
}
