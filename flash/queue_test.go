package flash_test

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
)

// A writer held up (here by a reject handler that waits) fills its queue:
// TryApply says ErrQueueFull, Apply waits for room, and nothing accepted is
// lost.
func TestFlash_QueueBackpressure(t *testing.T) {
	gate := make(chan struct{})
	var once sync.Once
	ix := flash.New(flash.WithWriters(1), flash.WithQueueSize(4), flash.WithRejectHandler(func(_ *flash.Event, err error) {
		if errors.Is(err, flash.ErrUnknownParent) {
			once.Do(func() { <-gate })
		}
	}))
	defer ix.Close()
	p := flashtest.Seqs(1, 20)
	w := flash.Worker{ID: 1}
	// An unknown parent: the writer stops in the handler.
	if err := ix.Apply(p.StoreEvent(w, 5, 6, 0)); err != nil {
		t.Fatal(err)
	}
	accepted := 0
	for i := 0; i < 20; i++ {
		err := ix.TryApply(p.StoreEvent(w, i, i+1, 0))
		if errors.Is(err, flash.ErrQueueFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		accepted++
	}
	if accepted < 3 || accepted > 5 {
		t.Fatalf("%d events fit a queue of 4 behind a busy writer", accepted)
	}
	if s := ix.Stats(); s.RejectedQueueFull != 1 {
		t.Fatalf("RejectedQueueFull = %d, want 1", s.RejectedQueueFull)
	}
	// The queue holds what was accepted plus the event being applied.
	if d := ix.QueueDepths(nil); len(d) != 1 || d[0] != accepted+1 {
		t.Fatalf("QueueDepths = %v, want [%d]", d, accepted+1)
	}
	done := make(chan error)
	go func() { done <- ix.Apply(p.StoreEvent(w, accepted, accepted+1, 0)) }()
	select {
	case err := <-done:
		t.Fatalf("Apply returned %v with a full queue", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ix.Flush()
	var sc flash.Scores
	ix.FindMatches(flash.Query{Locals: p}, &sc)
	if got := sc.Depth(w); got != accepted+1 {
		t.Fatalf("depth %d, want %d: an accepted event was lost", got, accepted+1)
	}
}

// Close while four goroutines apply and one queries: no panic, no deadlock,
// every accepted event applied, ErrClosed afterwards, queries answering.
// Both writers are held (each in the capacity callback of a gate worker's
// first event) until Close has begun, so every loader, with a queue of 8
// and a chain of 20,000 events, is still applying when Close lands: the
// test cannot pass with the load already over.
func TestFlash_CloseUnderLoad(t *testing.T) {
	gate := make(chan struct{})
	gates := map[uint64]bool{} // written before the first event
	held := func(w flash.Worker) int {
		if gates[w.ID] {
			<-gate
		}
		return 0
	}
	ix := flash.New(flash.WithWriters(2), flash.WithQueueSize(8), flash.WithWorkerCapacityOf(held))
	for id := uint64(1000); len(gates) < ix.Lanes(); id++ {
		if ix.LaneOf(id) == len(gates) {
			gates[id] = true
		}
	}
	for id := range gates {
		if err := ix.Apply(flashtest.P(1).StoreEvent(flash.Worker{ID: id}, 0, 1, 0)); err != nil {
			t.Fatal(err)
		}
	}
	const chain = 20000
	blocks := flashtest.Seqs(1, chain).Blocks(0, chain, 0)
	var wg sync.WaitGroup
	accepted := make([]int, 4)
	var started sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		started.Add(1)
		go func() {
			defer wg.Done()
			w := flash.Worker{ID: uint64(g)}
			started.Done() // a loader may wait for room from its first event
			for i := 0; ; i++ {
				if i == chain {
					t.Errorf("worker %d: all %d events accepted before Close", g, chain)
					return
				}
				ev := flash.StoredEvent(w, blocks[i])
				if i > 0 {
					ev = ev.WithParent(blocks[i-1].Hash)
				}
				if err := ix.Apply(ev); err != nil {
					if !errors.Is(err, flash.ErrClosed) {
						t.Error(err)
					}
					return
				}
				accepted[g]++
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		var sc flash.Scores
		for i := 0; i < 200; i++ {
			ix.FindMatches(flash.Query{Locals: flashtest.Seqs(1, 64)}, &sc)
		}
	}()
	started.Wait() // every loader is under way
	closed := make(chan error, 1)
	go func() { closed <- ix.Close() }()
	probe := flashtest.P(1).StoreEvent(flash.Worker{ID: 9}, 0, 1, 0)
	for !errors.Is(ix.TryApply(probe), flash.ErrClosed) {
		runtime.Gosched()
	}
	close(gate) // Close has begun: the writers may drain
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	var sc flash.Scores
	ix.FindMatches(flash.Query{Locals: flashtest.Seqs(1, chain)}, &sc)
	for g := 0; g < 4; g++ {
		if got := sc.Depth(flash.Worker{ID: uint64(g)}); got != accepted[g] || got == chain {
			t.Fatalf("worker %d: depth %d after Close, %d events accepted", g, got, accepted[g])
		}
	}
	if err := ix.Apply(probe); !errors.Is(err, flash.ErrClosed) {
		t.Fatalf("Apply after Close: %v", err)
	}
}
