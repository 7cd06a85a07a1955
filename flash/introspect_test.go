package flash_test

import (
	"testing"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
)

// WorkerBlocks lists every worker holding a slot with its block count, in
// the order of IDs and ranks, and QueueDepths one entry per writer, empty
// once flushed.
func TestFlash_WorkerBlocksAndQueueDepths(t *testing.T) {
	for _, writers := range []int{0, 1, 3} {
		ix := flash.New(flash.WithWriters(writers))
		p := flashtest.Seqs(1, 12)
		want := map[flash.Worker]int{}
		for i := 1; i <= 5; i++ {
			w := flash.Worker{ID: uint64(i % 3), DPRank: uint32(i)}
			if err := ix.Apply(p.StoreEvent(w, 0, i+2, 0)); err != nil {
				t.Fatal(err)
			}
			want[w] = i + 2
		}
		if err := ix.RemoveWorker(2); err != nil {
			t.Fatal(err)
		}
		for w := range want {
			if w.ID == 2 {
				delete(want, w)
			}
		}
		ix.Flush()
		got := map[flash.Worker]int{}
		var order []flash.Worker
		ix.WorkerBlocks(func(w flash.Worker, n int) { got[w] = n; order = append(order, w) })
		for i := 1; i < len(order); i++ {
			if a, b := order[i-1], order[i]; a.ID > b.ID || a.ID == b.ID && a.DPRank >= b.DPRank {
				t.Fatalf("writers %d: WorkerBlocks in the order %v", writers, order)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("writers %d: WorkerBlocks %v, want %v", writers, got, want)
		}
		for w, n := range want {
			if got[w] != n || ix.BlockCount(w) != n {
				t.Fatalf("writers %d: %v holds %d (BlockCount %d), want %d", writers, w, got[w], ix.BlockCount(w), n)
			}
		}
		d := ix.QueueDepths(nil)
		if len(d) != writers {
			t.Fatalf("writers %d: QueueDepths %v", writers, d)
		}
		for _, n := range d {
			if n != 0 {
				t.Fatalf("writers %d: QueueDepths %v after Flush", writers, d)
			}
		}
		ix.Close()
	}
}

// DetectFeatures describes the machine and plans a CPU for each default
// writer where it can pin them.
func TestDetectFeatures(t *testing.T) {
	f := flash.DetectFeatures()
	if f.Machine == "" || f.GOMAXPROCS < 1 {
		t.Fatalf("features %+v", f)
	}
	if f.Pinning && len(f.WriterCPUs) != flash.DefaultWriters() {
		t.Fatalf("%d writer CPUs planned for %d writers", len(f.WriterCPUs), flash.DefaultWriters())
	}
	t.Logf("%+v", f)
}
