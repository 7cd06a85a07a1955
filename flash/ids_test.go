package flash_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
)

func TestFlash_EventIDGapsAndRestarts(t *testing.T) {
	for _, writers := range []int{0, 2} {
		t.Run(fmt.Sprintf("writers=%d", writers), func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			ix := flash.New(flash.WithWriters(writers), flash.WithEventIDs(func(w flash.Worker, expected, id uint64) {
				mu.Lock()
				got = append(got, fmt.Sprintf("%d:%d->%d", w.ID, expected, id))
				mu.Unlock()
			}))
			defer ix.Close()
			p := flashtest.Seqs(1, 20)
			a, b := flash.Worker{ID: 1}, flash.Worker{ID: 2}
			ev := func(w flash.Worker, id uint64, i int) {
				if err := ix.Apply(p.StoreEvent(w, i, i+1, 0).WithID(id)); err != nil {
					t.Fatal(err)
				}
			}
			ev(a, 5, 0)
			ev(b, 100, 0)
			ev(a, 6, 1)
			ev(b, 101, 1)
			ev(a, 7, 2)
			ev(a, 9, 3)  // 8 was lost
			ev(b, 0, 2)  // worker 2's engine restarted
			ev(b, 1, 3)  // in sequence again
			ev(a, 10, 4) // in sequence after the gap
			// An event id is consumed even when the event is rejected.
			if err := ix.Apply(p.StoreEvent(a, 15, 16, 0).WithID(11)); err != nil && writers > 0 {
				t.Fatal(err)
			}
			ev(a, 12, 5)
			_ = ix.RemoveWorker(2) // a removed worker starts a new sequence
			ev(b, 50, 0)
			ix.Flush()
			want := []string{"1:8->9", "2:102->0"}
			mu.Lock()
			defer mu.Unlock()
			slices.Sort(got) // workers on different writers report in any order
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("reports %v, want %v", got, want)
			}
			if s := ix.Stats(); s.EventGaps != 1 || s.EventRestarts != 1 {
				t.Fatalf("EventGaps %d, EventRestarts %d, want 1 and 1", s.EventGaps, s.EventRestarts)
			}
		})
	}
}

// Without WithEventIDs, or with WithEventIDs(nil), nothing is tracked:
// engines that do not number their events (every id 0) are not reported as
// restarting, nor ids that jump as gaps.
func TestFlash_EventIDsOffByDefault(t *testing.T) {
	for _, opts := range [][]flash.Option{{flash.WithWriters(0)}, {flash.WithWriters(0), flash.WithEventIDs(nil)}} {
		ix := flash.New(opts...)
		p := flashtest.Seqs(1, 5)
		for i := 0; i < 5; i++ {
			_ = ix.Apply(p.StoreEvent(flash.Worker{ID: 1}, i, i+1, 0))
		}
		for i, id := range []uint64{1, 5, 9, 2} {
			ev := p.StoreEvent(flash.Worker{ID: 2}, i, i+1, 0)
			ev.ID = id
			_ = ix.Apply(ev)
		}
		if s := ix.Stats(); s.EventGaps != 0 || s.EventRestarts != 0 {
			t.Fatalf("%d options: %d gaps, %d restarts counted", len(opts), s.EventGaps, s.EventRestarts)
		}
		ix.Close()
	}
}
