package flash_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
	"github.com/flashindexer/flashindexer/flash/model"
)

// LaneOf spreads workers over every lane and keeps a worker's DP ranks in
// one; a synchronous index has the lanes it was asked for.
func TestFlash_LaneOf(t *testing.T) {
	for _, c := range []struct{ writers, syncLanes, want int }{
		{0, 0, 1}, {0, 1, 1}, {0, 4, 4}, {0, 1000, flash.MaxSyncLanes}, {2, 4, 2},
	} {
		opts := []flash.Option{flash.WithWriters(c.writers)}
		if c.syncLanes > 0 {
			opts = append(opts, flash.WithSyncLanes(c.syncLanes))
		}
		ix := flash.New(opts...)
		if got := ix.Lanes(); got != c.want {
			t.Errorf("writers %d, sync lanes %d: Lanes() = %d, want %d", c.writers, c.syncLanes, got, c.want)
		}
		used := map[int]int{}
		for id := uint64(0); id < 1024; id++ {
			l := ix.LaneOf(id)
			if l < 0 || l >= ix.Lanes() {
				t.Fatalf("LaneOf(%d) = %d, outside [0, %d)", id, l, ix.Lanes())
			}
			if f := flash.LaneFor(id, ix.Lanes()); f != l {
				t.Fatalf("LaneOf(%d) = %d, LaneFor = %d", id, l, f)
			}
			used[l]++
		}
		if len(used) != ix.Lanes() {
			t.Errorf("1024 workers use %d of %d lanes", len(used), ix.Lanes())
		}
		ix.Close()
	}
}

// Several goroutines apply the events of their own workers at once to a
// synchronous index with a lane per goroutine, while readers query. Workers
// share prompts, so the goroutines change the same shared entries. Every
// Apply succeeds, and the final index equals the model given each
// goroutine's events. With a table per lane the goroutines share no table.
func TestFlash_SyncLanesParallelApply(t *testing.T) {
	for _, tables := range []bool{false, true} {
		t.Run(fmt.Sprintf("lane-tables=%v", tables), func(t *testing.T) { syncLanesParallelApply(t, tables) })
	}
}

func syncLanesParallelApply(t *testing.T, laneTables bool) {
	const appliers, workersEach = 4, 6
	rounds := 400
	if testing.Short() {
		rounds = 100
	}
	cfg := flash.DefaultConfig()
	cfg.MaxWorkers = 64
	ix := flash.New(flash.WithConfig(cfg), flash.WithWriters(0), flash.WithSyncLanes(appliers), flash.WithLaneTables(laneTables))
	defer ix.Close()
	prompts := flashtest.Variants(flashtest.Seqs(1, 200), 4, 5, 40, 5000)
	// Each applier owns the workers of its lane.
	owned := make([][]flash.Worker, appliers)
	for id := uint64(0); len(owned[0])+len(owned[1])+len(owned[2])+len(owned[3]) < appliers*workersEach; id++ {
		l := ix.LaneOf(id)
		if len(owned[l]) < workersEach {
			owned[l] = append(owned[l], flash.Worker{ID: id, DPRank: uint32(id % 2)})
		}
	}
	logs := make([][]flash.Event, appliers)
	var wg sync.WaitGroup
	errs := make(chan error, appliers)
	for a := range appliers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(a), 9))
			for range rounds {
				w := owned[a][r.IntN(len(owned[a]))]
				p := prompts[r.IntN(len(prompts))]
				var ev flash.Event
				switch k := r.IntN(10); {
				case k < 6:
					from := 0
					if r.IntN(3) == 0 {
						from = r.IntN(len(p))
					}
					ev = p.StoreEvent(w, from, min(len(p), from+1+r.IntN(50)), 0)
				case k < 9:
					ev = flash.RemovedEvent(w, p.Hash(r.IntN(len(p)), 0), p.Hash(r.IntN(len(p)), 0))
				default:
					ev = flash.ClearedEvent(w)
				}
				err := ix.Apply(ev)
				if err == flash.ErrUnknownParent {
					continue // a store from the middle of a prompt the worker lost
				}
				if err != nil {
					errs <- fmt.Errorf("applier %d: %v", a, err)
					return
				}
				logs[a] = append(logs[a], ev)
			}
		}()
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		var sc flash.Scores
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, p := range prompts {
				ix.FindMatches(flash.Query{Locals: p}, &sc)
				for _, m := range sc.Matches {
					if m.Depth < 1 || m.Depth > len(p) {
						errs <- fmt.Errorf("reader: depth %d", m.Depth)
						return
					}
				}
			}
		}
	}()
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ref := model.New(cfg)
	applied := 0
	for _, log := range logs {
		for _, ev := range log {
			if err := ref.Apply(ev); err != nil {
				t.Fatalf("model rejects an event flash accepted: %v", err)
			}
			applied++
		}
	}
	if applied < appliers*rounds/2 {
		t.Fatalf("only %d of %d events applied", applied, appliers*rounds)
	}
	var sc flash.Scores
	for _, p := range prompts {
		for _, d := range []int{1, 7, 64, len(p)} {
			q := flash.Query{Locals: p[:d]}
			if got, want := answer(ix, q, &sc), answer(ref, q, &sc); got != want {
				t.Fatalf("depth %d: got %s\nmodel %s", d, got, want)
			}
		}
	}
	for _, ws := range owned {
		for _, w := range ws {
			if got, want := ix.BlockCount(w), ref.BlockCount(w); got != want {
				t.Fatalf("%v: %d blocks, model %d", w, got, want)
			}
		}
	}
}

// answer is idx's answer to q, sorted, as text: two indexes agree on q when
// their answers are equal.
func answer(idx flash.Index, q flash.Query, sc *flash.Scores) string {
	idx.FindMatches(q, sc)
	sc.Sort()
	return fmt.Sprint(sc.Matches)
}
