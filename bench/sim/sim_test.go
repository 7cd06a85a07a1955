package sim

import (
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
