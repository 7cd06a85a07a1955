package flash_test

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
)

// engineSim is a worker with a bounded cache: it stores whole prompts and,
// when full, evicts its oldest prompt's own blocks, tail first, so stores and
// removes balance once the caches are full.
type engineSim struct {
	w      flash.Worker
	held   []flashtest.Prompt
	blocks int
	cap    int
	prefix int
	nextID uint64
}

func (e *engineSim) step(ix flash.Index, r *rand.Rand, shared flashtest.Prompt) (ops int) {
	// Seqs shifts its seed 32 bits: the worker's ID goes at bit 20 (bit 52
	// of the block ids) so that no two workers' prompts share blocks.
	p := flashtest.Concat(shared[:e.prefix], flashtest.Seqs(uint64(e.w.ID)<<20|e.nextID, 24+r.IntN(16)))
	e.nextID++
	_ = ix.Apply(p.StoreEvent(e.w, 0, len(p), 0))
	e.held = append(e.held, p)
	e.blocks += len(p) - e.prefix
	ops += len(p)
	for e.blocks > e.cap {
		old := e.held[0]
		e.held = e.held[1:]
		hs := make([]flash.ExternalHash, 0, len(old)-e.prefix)
		for i := len(old) - 1; i >= e.prefix; i-- {
			hs = append(hs, old.Hash(i, 0))
		}
		_ = ix.Apply(flash.RemovedEvent(e.w, hs...))
		e.blocks -= len(old) - e.prefix
		ops += len(hs)
	}
	return ops
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// After warm-up the index's heap stays level while ten times more events
// flow: freed entries, slots, nodes and map slots are reused or compacted.
func TestFlash_SoakBoundedMemory(t *testing.T) {
	workers, capBlocks, warm := 16, 4000, 300_000
	if testing.Short() {
		workers, capBlocks, warm = 8, 1000, 40_000
	}
	ix := flash.New(flash.WithWriters(0), flash.WithMaxWorkers(64))
	defer ix.Close()
	r := rand.New(rand.NewPCG(1, 2))
	shared := flashtest.Seqs(0, 16)
	engines := make([]*engineSim, workers)
	for i := range engines {
		engines[i] = &engineSim{w: flash.Worker{ID: uint64(i)}, cap: capBlocks, prefix: 8 + i%8}
	}
	run := func(blockOps int) {
		for done := 0; done < blockOps; {
			done += engines[r.IntN(workers)].step(ix, r, shared)
		}
	}
	run(warm)
	base := heapInUse()
	held := 0
	for _, e := range engines {
		held += ix.BlockCount(e.w)
	}
	var peak uint64
	for round := 0; round < 10; round++ {
		run(warm)
		peak = max(peak, heapInUse())
	}
	s := ix.Stats()
	t.Logf("%d (block, worker) held; heap %d MB after warm-up, peak %d MB over 10× more block-ops (%d stored, %d removed); %.0f bytes per held (block, worker)",
		held, base>>20, peak>>20, s.BlocksStored, s.BlocksRemoved, float64(base)/float64(held))
	if s.BlocksRemoved < s.BlocksStored/2 {
		t.Fatalf("stores and removes did not balance: %d stored, %d removed", s.BlocksStored, s.BlocksRemoved)
	}
	if float64(peak) > 1.10*float64(base) {
		t.Fatalf("heap grew from %d to %d bytes under churn", base, peak)
	}
}
