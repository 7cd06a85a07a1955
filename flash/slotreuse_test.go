package flash_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
)

// A query names only workers that held the prefix at some instant during
// it: when the worker it saw is removed and another takes the same slot
// before the answer is written, the newcomer is not reported in its place.
// Worker A alone ever holds the queried block; B, stored and removed in turn
// with A, takes A's freed slot each time.
func TestFlash_SlotReuseNamesNoOtherWorker(t *testing.T) {
	for _, writers := range []int{0, 1} {
		t.Run(fmt.Sprintf("writers=%d", writers), func(t *testing.T) { slotReuse(t, writers) })
	}
}

func slotReuse(t *testing.T, writers int) {
	ix := flash.New(flash.WithMaxWorkers(4), flash.WithWriters(writers))
	defer ix.Close()
	a, b := flash.Worker{ID: 1}, flash.Worker{ID: 2, DPRank: 7}
	pa, pb := flashtest.Seqs(11, 1), flashtest.Seqs(12, 1)
	q := flash.Query{Locals: pa}
	var stop atomic.Bool
	var wrong atomic.Value
	var queries, seen atomic.Int64
	var wg sync.WaitGroup
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sc flash.Scores
			for !stop.Load() {
				ix.FindMatches(q, &sc)
				queries.Add(1)
				for _, m := range sc.Matches {
					if m.Worker != a || m.Depth != 1 {
						wrong.CompareAndSwap(nil, fmt.Sprintf("match %+v: only %v ever holds the block", m, a))
						stop.Store(true)
					}
					seen.Add(1)
				}
			}
		}()
	}
	deadline := time.Now().Add(2 * time.Second)
	for i := 0; i < 200000 && !stop.Load() && time.Now().Before(deadline); i++ {
		for _, err := range []error{
			ix.Apply(pa.StoreEvent(a, 0, 1, 0)),
			ix.RemoveWorker(a.ID),
			ix.Apply(pb.StoreEvent(b, 0, 1, 0)),
			ix.RemoveWorker(b.ID),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	if w := wrong.Load(); w != nil {
		t.Fatal(w)
	}
	t.Logf("%d queries, %d matches of %v", queries.Load(), seen.Load(), a)
}
