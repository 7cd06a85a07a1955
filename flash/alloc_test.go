package flash_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
	"github.com/flashindexer/flashindexer/flash/internal/worker"
	"github.com/flashindexer/flashindexer/internal/allocs"
)

func TestFlash_FindMatchesZeroAllocs(t *testing.T) {
	t.Run("one-table", func(t *testing.T) {
		findZeroAllocs(t, flash.New(flash.WithWriters(0), flash.WithMaxWorkers(256)))
	})
	t.Run("lane-tables", func(t *testing.T) {
		findZeroAllocs(t, flash.New(flash.WithWriters(0), flash.WithSyncLanes(3), flash.WithLaneTables(true), flash.WithMaxWorkers(256)))
	})
}

func findZeroAllocs(t *testing.T, ix *flash.Indexer) {
	defer ix.Close()
	p := flashtest.Seqs(1, 1024)
	for w := uint64(0); w < 200; w++ {
		_ = ix.Apply(p.StoreEvent(flash.Worker{ID: w}, 0, 1+int(w*5)%1024, 0))
	}
	var sc flash.Scores
	withSeqs := flash.Query{Locals: p, Seqs: p.Seq()}
	lazy := flash.Query{Locals: p}
	ix.FindMatches(lazy, &sc) // grows the scratch once
	if n := testing.AllocsPerRun(100, func() {
		ix.FindMatches(withSeqs, &sc)
		ix.FindMatches(lazy, &sc)
	}); n != 0 {
		t.Fatalf("%v allocations per FindMatches", n)
	}
	if len(sc.Matches) != 200 {
		t.Fatalf("%d matches, want 200", len(sc.Matches))
	}
}

// steadyEvents stores a prompt on a worker and removes it again: after the
// first rounds every structure has grown to size and nothing allocates. Each
// measured round ends with a Flush, so that what writer goroutines allocate
// applying it falls inside the count.
func steadyEvents(ix *flash.Indexer, t *testing.T) {
	p := flashtest.Seqs(1, 64)
	w := flash.Worker{ID: 3}
	store := p.StoreEvent(w, 0, 64, 0)
	hashes := make([]flash.ExternalHash, 64)
	for i := range hashes {
		hashes[i] = p.Hash(i, 0)
	}
	remove := flash.RemovedEvent(w, hashes...)
	other := p.StoreEvent(flash.Worker{ID: 4}, 0, 64, 0) // keeps the shared entries alive
	_ = ix.Apply(other)
	round := func() {
		if err := ix.Apply(store); err != nil {
			t.Fatal(err)
		}
		if err := ix.Apply(remove); err != nil {
			t.Fatal(err)
		}
		ix.Flush()
	}
	for i := 0; i < 50; i++ {
		round()
	}
	if n := testing.AllocsPerRun(200, round); n != 0 {
		t.Fatalf("%v allocations per store+remove of 64 blocks", n)
	}
	ix.Flush()
	if n := testing.AllocsPerRun(100, ix.Flush); n != 0 {
		t.Fatalf("%v allocations per Flush of an idle index", n)
	}
}

func TestFlash_ApplyZeroAllocsSync(t *testing.T) {
	ix := flash.New(flash.WithWriters(0))
	defer ix.Close()
	steadyEvents(ix, t)
}

func TestFlash_ApplyZeroAllocsLaneTables(t *testing.T) {
	ix := flash.New(flash.WithWriters(0), flash.WithSyncLanes(2), flash.WithLaneTables(true))
	defer ix.Close()
	steadyEvents(ix, t)
}

func TestFlash_ApplyZeroAllocsWriters(t *testing.T) {
	ix := flash.New(flash.WithWriters(1), flash.WithQueueSize(16))
	defer ix.Close()
	steadyEvents(ix, t)
}

// Full caches in steady state: each of 16 workers keeps its last 32
// prompts of its own, and storing a new one evicts the oldest, leaf first.
// The shard tables fill with tombstones and are rebuilt at their size,
// each taking the table the last rebuild replaced, while two readers query
// a prompt that 8 other workers hold and check their depths at every
// answer (a reader on a reused table must not see another position's
// keys). Once warm, a round of stores and evictions allocates nothing.
func TestFlash_SteadyChurnZeroAllocs(t *testing.T) {
	const keep, own = 32, 32
	churners, ring := 16, 512
	if testing.Short() {
		churners, ring = 8, 256
	}
	ix := flash.New(flash.WithWriters(0))
	defer ix.Close()
	p := flashtest.Seqs(1, 64)
	stable := map[flash.Worker]int{}
	for i := range 8 {
		w := flash.Worker{ID: uint64(100 + i)}
		stable[w] = 8 + 7*i
		if err := ix.Apply(p.StoreEvent(w, 0, stable[w], 0)); err != nil {
			t.Fatal(err)
		}
	}
	// The events of ring prompts per worker: prompt k evicts k-keep.
	prompt := func(k, w int) flashtest.Prompt { return flashtest.Seqs(uint64(1000+k*churners+w), own) }
	var events []flash.Event
	for k := 0; k < ring; k++ {
		for w := 0; w < churners; w++ {
			wk := flash.Worker{ID: uint64(w)}
			old := prompt((k-keep+ring)%ring, w)
			hs := make([]flash.ExternalHash, 0, own)
			for j := own - 1; j >= 0; j-- {
				hs = append(hs, old.Hash(j, 0))
			}
			events = append(events, prompt(k, w).StoreEvent(wk, 0, own, 0), flash.RemovedEvent(wk, hs...))
		}
	}
	for k := ring - keep; k < ring; k++ { // the prompts held when a round starts
		for w := 0; w < churners; w++ {
			if err := ix.Apply(prompt(k, w).StoreEvent(flash.Worker{ID: uint64(w)}, 0, own, 0)); err != nil {
				t.Fatal(err)
			}
		}
	}
	round := func() {
		for _, ev := range events {
			if err := ix.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan string, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sc flash.Scores
			for !stop.Load() {
				ix.FindMatches(flash.Query{Locals: p}, &sc)
				if len(sc.Matches) != len(stable) {
					errs <- fmt.Sprintf("%d matches, want %d", len(sc.Matches), len(stable))
					return
				}
				for _, m := range sc.Matches {
					if m.Depth != stable[m.Worker] {
						errs <- fmt.Sprintf("worker %v: depth %d, want %d", m.Worker, m.Depth, stable[m.Worker])
						return
					}
				}
			}
		}()
	}
	for range 3 {
		round()
	}
	stop.Store(true)
	wg.Wait()
	select {
	case e := <-errs:
		t.Fatal(e)
	default:
	}
	if n := testing.AllocsPerRun(2, round); n != 0 {
		t.Fatalf("%v allocations per round of %d events", n, len(events))
	}
	if st := ix.Stats(); st.RemovesUnknown != 0 || st.EventsRejected != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// With a capacity hint made ahead (WithReservedCapacity) a worker's private
// state is made for its cache when it is first seen: filling it allocates
// nothing more. The shared entries
// exist already (another worker holds the chain), so what the fill could
// allocate is the worker's own growth; without the hint it does grow.
func TestFlash_CapacityHintFillsWithoutAllocating(t *testing.T) {
	const n, batch = 8192, 64
	p := flashtest.Seqs(7, n)
	fill := func(ix *flash.Indexer, w flash.Worker) uint64 {
		var evs []flash.Event
		for from := 0; from < n; from += batch {
			evs = append(evs, p.StoreEvent(w, from, from+batch, 0))
		}
		// The first event makes the worker's state; count the rest.
		if err := ix.Apply(evs[0]); err != nil {
			t.Fatal(err)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.Mallocs
		for _, ev := range evs[1:] {
			if err := ix.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&ms)
		return ms.Mallocs - before
	}
	for _, hinted := range []bool{true, false} {
		opts := []flash.Option{flash.WithWriters(0), flash.WithMaxWorkers(64)}
		if hinted {
			opts = append(opts, flash.WithReservedCapacity(), flash.WithWorkerCapacityOf(func(w flash.Worker) int {
				if w.ID < 9 {
					return n
				}
				return 0
			}))
		}
		ix := flash.New(opts...)
		fill(ix, flash.Worker{ID: 9}) // the shared entries, and the lane's scratch
		// The counts are the whole process's: the fewest of three workers'
		// fills is the index's own, whatever else ran meanwhile. Under
		// emulation (CI's arm64 run) a fill is slow enough that the
		// runtime's own allocations landed in all three once: up to five
		// more workers fill while the count is not 0. The index's own
		// allocations happen in every fill.
		got := ^uint64(0)
		for id := uint64(1); id <= 3 || got != 0 && id <= 8; id++ {
			got = min(got, fill(ix, flash.Worker{ID: id}))
			if b := ix.BlockCount(flash.Worker{ID: id}); b != n {
				t.Errorf("hinted=%v: worker %d holds %d blocks, want %d", hinted, id, b, n)
			}
		}
		if hinted && got != 0 {
			t.Errorf("with a hint: %d allocations filling a worker", got)
		}
		if !hinted && got == 0 {
			t.Errorf("without a hint the fill allocated nothing: the test measures nothing")
		}
		ix.Close()
	}
}

// A hinted worker declared ahead (AddWorker, WithReservedCapacity) fills
// from its first event without allocating: its state was made when it was
// declared. A worker
// that is not declared makes its state on its first event.
func TestFlash_AddWorkerKeepsAllocationsOffTheEvents(t *testing.T) {
	const n, batch = 4096, 64
	p := flashtest.Seqs(7, n)
	ix := flash.New(flash.WithWriters(0), flash.WithMaxWorkers(64), flash.WithWorkerCapacity(n), flash.WithReservedCapacity())
	defer ix.Close()
	var evs []flash.Event
	fill := func(w flash.Worker) uint64 {
		evs = evs[:0]
		for from := 0; from < n; from += batch {
			evs = append(evs, p.StoreEvent(w, from, from+batch, 0))
		}
		return applyMallocs(t, ix, evs)
	}
	fill(flash.Worker{ID: 99}) // the shared entries, and the lane's scratch
	// The fewest of several workers' fills is the index's own (as in
	// TestFlash_CapacityHintFillsWithoutAllocating).
	declared, fresh := ^uint64(0), ^uint64(0)
	for id := uint64(1); id <= 3 || declared != 0 && id <= 8; id++ {
		w := flash.Worker{ID: id}
		if err := ix.AddWorker(w); err != nil {
			t.Fatal(err)
		}
		declared = min(declared, fill(w))
		fresh = min(fresh, fill(flash.Worker{ID: 100 + id}))
		if b := ix.BlockCount(w); b != n {
			t.Errorf("worker %d holds %d blocks, want %d", id, b, n)
		}
	}
	if declared != 0 {
		t.Errorf("a declared, hinted worker's fill allocated %d times", declared)
	}
	if fresh == 0 {
		t.Errorf("an undeclared worker's fill allocated nothing: the test measures nothing")
	}
}

// Predictions in steady state: Predict, their expiry and FindMatches over
// exact and predicted blocks allocate nothing once grown (the expiry timer
// and the Flushes inside the count).
func TestFlash_PredictZeroAllocs(t *testing.T) {
	for _, writers := range []int{0, 2} {
		t.Run(fmt.Sprintf("writers=%d", writers), func(t *testing.T) {
			var now atomic.Int64
			cfg := flash.DefaultConfig()
			cfg.MaxWorkers, cfg.Clock = 256, func() time.Duration { return time.Duration(now.Load()) }
			// A short queue: the warm-up rounds give each of its items
			// its buffers.
			ix := flash.New(flash.WithWriters(writers), flash.WithConfig(cfg), flash.WithQueueSize(16))
			defer ix.Close()
			p := flashtest.Seqs(1, 256)
			for w := uint64(0); w < 100; w++ {
				_ = ix.Apply(p.StoreEvent(flash.Worker{ID: w}, 0, 1+int(w*3)%256, 0))
			}
			q := flash.Query{Locals: p}
			var sc flash.Scores
			round := func() {
				for w := uint64(50); w < 150; w++ {
					if err := ix.Predict(flash.Worker{ID: w}, flash.Query{Locals: p[:128]}, 10); err != nil {
						t.Fatal(err)
					}
				}
				ix.Flush()
				ix.FindMatches(q, &sc)
				if len(sc.Matches) != 150 {
					t.Fatalf("%d matches, want 150", len(sc.Matches))
				}
				now.Add(10) // every prediction expires: the next round makes them again
				ix.Flush()
			}
			for range 5 {
				round()
			}
			if n := testing.AllocsPerRun(20, round); n != 0 {
				t.Fatalf("%v allocations per round of 100 predictions", n)
			}
		})
	}
}

// A full cache whose content moves between positions, as a fleet's does:
// prompts of varied depth, each a prefix of one of a few shared documents
// and a tail of the worker's own, each new one evicting the worker's
// oldest tail (leaf first). Tables grow where the tails reach and shrink
// or go where they leave. Once the sizes the churn needs are among the
// spares, a round of 1,024 events allocates nothing; before, every round
// allocated 6–19 tables.
func TestFlash_MovingContentZeroAllocs(t *testing.T) {
	const workers, ring, keep = 8, 64, 16
	ix := flash.New(flash.WithWriters(0))
	defer ix.Close()
	docs := make([]flashtest.Prompt, 5)
	for d := range docs {
		docs[d] = flashtest.Seqs(uint64(10+d), 24)
	}
	// prompt k of worker w, and the length of its shared prefix.
	prompt := func(k, w int) (flashtest.Prompt, int) {
		pre := 4 + (k*3+w)%13
		own := flashtest.Seqs(uint64(1000+k*workers+w), 8+(k*5+w*3)%40)
		return flashtest.Concat(docs[(k*7+w)%len(docs)][:pre], own), pre
	}
	var events []flash.Event // a round: prompt k stored, k-keep evicted
	for k := range ring {
		for w := range workers {
			wk := flash.Worker{ID: uint64(w)}
			p, _ := prompt(k, w)
			old, pre := prompt((k-keep+ring)%ring, w)
			hs := make([]flash.ExternalHash, 0, len(old))
			for j := len(old) - 1; j >= pre; j-- {
				hs = append(hs, old.Hash(j, 0))
			}
			events = append(events, p.StoreEvent(wk, 0, len(p), 0), flash.RemovedEvent(wk, hs...))
		}
	}
	for k := ring - keep; k < ring; k++ { // what a round starts with
		for w := range workers {
			p, _ := prompt(k, w)
			if err := ix.Apply(p.StoreEvent(flash.Worker{ID: uint64(w)}, 0, len(p), 0)); err != nil {
				t.Fatal(err)
			}
		}
	}
	round := func() {
		for _, ev := range events {
			if err := ix.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 10 {
		round()
	}
	held := ix.Stats().BlocksStored - ix.Stats().BlocksRemoved
	// One run of 8 rounds: AllocsPerRun rounds an average down.
	if n := allocs.Of(func() {
		for range 8 {
			round()
		}
	}); n != 0 {
		t.Fatalf("%v allocations in 8 rounds of %d events", n, len(events))
	}
	if s := ix.Stats(); s.BlocksStored-s.BlocksRemoved != held || s.EventsRejected != 0 {
		t.Fatalf("the rounds do not balance: %+v", s)
	}
}

// A fleet declared ahead with capacity hints made ahead
// (WithReservedCapacity) fills from empty without allocating: each
// worker's state is made when it is declared, and room in
// the shared tables it writes (its plane's, past 64 workers) is set aside
// for its blocks then (shardmap's Reserve), with the levels of its
// positions and the lane's batch scratch. Past 128 workers, a set of four
// or more workers with one past slot 61 takes an arena slot, whose parts
// (of 128 slots and more) are made as the sets come: the fill allocates
// those parts and nothing else. The prompts are a fleet's: a few system
// prompts, each under many requests of varied length. Without the
// declarations the same fill allocates.
func TestFlash_DeclaredFleetFillsWithoutAllocating(t *testing.T) {
	for _, c := range []struct{ workers, maxWorkers int }{{16, 64}, {96, 128}, {40, 256}, {200, 256}} {
		t.Run(fmt.Sprintf("w=%d/max=%d", c.workers, c.maxWorkers), func(t *testing.T) {
			var evs []flash.Event
			held := map[flash.Worker]map[flash.ExternalHash]bool{}
			for r := range 24 * c.workers {
				w := flash.Worker{ID: uint64(r % c.workers)}
				sys := flashtest.Seqs(uint64(r%5)+1, 32)
				p := flashtest.Concat(sys, flashtest.Seqs(uint64(r)+100, 8+r*37%300))
				ev := p.StoreEvent(w, 0, len(p), 0)
				evs = append(evs, ev)
				if held[w] == nil {
					held[w] = map[flash.ExternalHash]bool{}
				}
				for _, b := range ev.Blocks {
					held[w][b.Hash] = true
				}
			}
			hint := 0
			for _, h := range held {
				hint = max(hint, len(h))
			}
			fill := func(declare bool) (uint64, *flash.Indexer) {
				opts := []flash.Option{flash.WithWriters(0), flash.WithMaxWorkers(c.maxWorkers)}
				if declare {
					opts = append(opts, flash.WithWorkerCapacity(hint), flash.WithReservedCapacity())
				}
				ix := flash.New(opts...)
				if declare {
					for w := range c.workers {
						if err := ix.AddWorker(flash.Worker{ID: uint64(w)}); err != nil {
							t.Fatal(err)
						}
					}
				}
				return applyMallocs(t, ix, evs), ix
			}
			// The fewest of up to three fills: the counts are the process's.
			got, parts := ^uint64(0), uint64(0)
			for try := 0; try < 3 && got > parts; try++ {
				n, ix := fill(true)
				got = min(got, n)
				// Arena parts: at most one a 128 slots of 2 + MaxWorkers/64
				// words.
				if c.maxWorkers > 128 {
					parts = uint64(ix.Memory().Entries / (128 * 8 * (2 + c.maxWorkers/64)))
				}
				for w, h := range held {
					if b := ix.BlockCount(w); b != len(h) {
						t.Fatalf("worker %v holds %d blocks, want %d", w, b, len(h))
					}
				}
				ix.Close()
			}
			// (The invariant checks grow their own buffers as workers fill.)
			if got > parts && !worker.Invariants {
				t.Errorf("a declared, hinted fleet's fill allocated %d times (arena parts: %d)", got, parts)
			}
			if n, ix := fill(false); n == 0 {
				t.Errorf("an undeclared fleet's fill allocated nothing: the test measures nothing")
			} else {
				ix.Close()
			}
		})
	}
}

// applyMallocs applies evs to ix and returns the process's heap
// allocations meanwhile.
func applyMallocs(t *testing.T, ix *flash.Indexer, evs []flash.Event) uint64 {
	t.Helper()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.Mallocs
	for _, ev := range evs {
		if err := ix.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&ms)
	return ms.Mallocs - before
}
