package flash_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
	"github.com/flashindexer/flashindexer/flash/model"
)

// Writers churn some workers while readers query: the workers that do not
// change must be answered exactly at every moment (slot reuse never shows a
// reader another entry's workers), and at quiescent points the whole index
// equals the model.
//
// With 256 workers, 60 fillers hold the stable workers' first blocks, so
// that the churners take slots past 62: the entries the stable workers
// share move to arena slots and back into the table's values as churners
// join and leave them, while readers query.
func TestFlash_ConcurrentStress(t *testing.T) {
	for _, workers := range []int{128, 256} {
		for _, tables := range []bool{false, true} {
			t.Run(fmt.Sprintf("workers=%d/lane-tables=%v", workers, tables), func(t *testing.T) { concurrentStress(t, workers, tables) })
		}
	}
}

func concurrentStress(t *testing.T, workers int, laneTables bool) {
	rounds, churners := 40, 24
	if testing.Short() {
		rounds = 12
	}
	cfg := flash.DefaultConfig()
	cfg.MaxWorkers = workers
	ix := flash.New(flash.WithConfig(cfg), flash.WithWriters(2), flash.WithQueueSize(32), flash.WithLaneTables(laneTables))
	defer ix.Close()
	ref := model.New(cfg)
	apply := func(ev flash.Event) {
		if err := ix.Apply(ev); err != nil {
			t.Fatal(err)
		}
		_ = ref.Apply(ev)
	}
	// Shared prompts with chunk collisions at equal positions.
	prompts := flashtest.Variants(flashtest.Seqs(1, 300), 6, 10, 37, 1000)
	// Stable workers: never touched after this.
	stable := map[flash.Worker]int{}
	for i := 0; i < 8; i++ {
		w := flash.Worker{ID: uint64(100 + i)}
		d := 20 + i*35
		apply(prompts[0].StoreEvent(w, 0, d, 0))
		stable[w] = d
	}
	if workers > 128 {
		for i := range 60 {
			apply(prompts[0].StoreEvent(flash.Worker{ID: uint64(1000 + i)}, 0, 1+i%30, 0))
		}
	}
	ix.Flush()

	var stop atomic.Bool
	var readers sync.WaitGroup
	var checked atomic.Int64
	errs := make(chan string, 4)
	for r := 0; r < 2; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			var sc flash.Scores
			q := flash.Query{Locals: prompts[0]}
			for !stop.Load() {
				ix.FindMatches(q, &sc)
				got := map[flash.Worker]int{}
				for _, m := range sc.Matches {
					if m.Depth < 1 || m.Depth > len(q.Locals) {
						errs <- fmt.Sprintf("depth %d", m.Depth)
						return
					}
					if _, dup := got[m.Worker]; dup {
						errs <- fmt.Sprintf("worker %v twice", m.Worker)
						return
					}
					got[m.Worker] = m.Depth
				}
				for w, d := range stable {
					if got[w] != d {
						errs <- fmt.Sprintf("stable worker %v: depth %d, want %d", w, got[w], d)
						return
					}
				}
				checked.Add(1)
			}
		}()
	}
	// A dumper snapshots the index all along.
	readers.Add(1)
	go func() {
		defer readers.Done()
		for !stop.Load() {
			if _, err := ix.Dump(io.Discard); err != nil {
				errs <- "Dump: " + err.Error()
				return
			}
		}
	}()
	r := rand.New(rand.NewPCG(7, 7))
	var sc flash.Scores
	for round := 0; round < rounds; round++ {
		for i := 0; i < 200; i++ {
			w := flash.Worker{ID: uint64(r.IntN(churners)), DPRank: uint32(r.IntN(2))}
			p := prompts[r.IntN(len(prompts))]
			switch k := r.IntN(20); {
			case k < 10:
				from := 0
				if r.IntN(2) == 0 {
					from = r.IntN(len(p))
				}
				apply(p.StoreEvent(w, from, min(len(p), from+1+r.IntN(60)), 0))
			case k < 17:
				apply(flash.RemovedEvent(w, p.Hash(r.IntN(len(p)), 0), p.Hash(r.IntN(len(p)), 0)))
			case k < 19:
				apply(flash.ClearedEvent(w))
			default:
				_ = ix.RemoveWorker(w.ID)
				_ = ref.RemoveWorker(w.ID)
			}
		}
		// A quiescent point: everything applied, compare with the model,
		// and a snapshot restored into a fresh index answers alike.
		ix.Flush()
		var snap bytes.Buffer
		if _, err := ix.Dump(&snap); err != nil {
			t.Fatal(err)
		}
		restored := flash.New(flash.WithConfig(cfg), flash.WithWriters(0))
		if err := restored.Restore(&snap); err != nil {
			t.Fatal(err)
		}
		for _, p := range prompts {
			q := flash.Query{Locals: p}
			want := answer(ref, q, &sc)
			if got := answer(ix, q, &sc); got != want {
				t.Fatalf("round %d: got %s\nmodel %s", round, got, want)
			}
			if got := answer(restored, q, &sc); got != want {
				t.Fatalf("round %d: restored snapshot %s\nmodel %s", round, got, want)
			}
		}
		restored.Close()
	}
	stop.Store(true)
	readers.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if checked.Load() == 0 {
		t.Fatal("readers checked nothing")
	}
	t.Logf("%d concurrent queries checked", checked.Load())
}
