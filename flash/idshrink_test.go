package flash_test

import (
	"bytes"
	"testing"

	"github.com/flashindexer/flashindexer/flash"
)

// An engine id a worker removed is gone for good, also when its removal
// shrinks the worker's map of ids, as the map of a worker of 1,000 blocks
// does while they leave. The blocks are removed one at a time; after each
// removal one more block is stored (it takes the node the removal freed),
// a snapshot of the index must list each engine id once and restore to the
// blocks held, and the extra block is removed again.
func TestFlash_RemovedIDsStayRemovedAsTheMapShrinks(t *testing.T) {
	const n = 1000
	w := flash.Worker{ID: 1}
	block := func(i int) flash.Block {
		return flash.Block{Hash: flash.ExternalHash(i + 1), Local: flash.LocalHash(1_000_000 + i)}
	}
	ix := flash.New(flash.WithWriters(0))
	defer ix.Close()
	for i := range n {
		if err := ix.Apply(flash.StoredEvent(w, block(i))); err != nil {
			t.Fatalf("store %d: %v", i, err)
		}
	}
	var buf bytes.Buffer
	var sc flash.Scores
	for k := range n {
		if err := ix.Apply(flash.RemovedEvent(w, block(k).Hash)); err != nil {
			t.Fatalf("removal %d: %v", k, err)
		}
		if err := ix.Apply(flash.StoredEvent(w, block(n))); err != nil {
			t.Fatalf("after removal %d: the extra store: %v", k, err)
		}
		buf.Reset()
		if _, err := ix.Dump(&buf); err != nil {
			t.Fatalf("after removal %d: dump: %v", k, err)
		}
		rx := flash.New(flash.WithWriters(0))
		if err := rx.Restore(&buf); err != nil {
			t.Fatalf("after removal %d: restore: %v", k, err)
		}
		blocks := 0
		rx.WorkerBlocks(func(_ flash.Worker, b int) { blocks += b })
		rx.FindMatches(flash.Query{Locals: []flash.LocalHash{block(k).Local}}, &sc)
		gone := len(sc.Matches)
		rx.FindMatches(flash.Query{Locals: []flash.LocalHash{block(n).Local}}, &sc)
		if want := n - k; blocks != want || gone != 0 || len(sc.Matches) != 1 {
			t.Fatalf("after removal %d, restored: %d blocks (want %d), the removed block matched by %d workers, the extra one by %d", k, blocks, want, gone, len(sc.Matches))
		}
		rx.Close()
		if err := ix.Apply(flash.RemovedEvent(w, block(n).Hash)); err != nil {
			t.Fatalf("after removal %d: the extra block's removal: %v", k, err)
		}
	}
}
