package flash_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
)

// Snapshots hold no predictions: a restored worker has none, and the
// others keep theirs.
func TestFlash_RestoreDropsPredictions(t *testing.T) {
	ix := flash.New(flash.WithWriters(2))
	defer ix.Close()
	p := flashtest.Seqs(1, 6)
	w1, w2 := flash.Worker{ID: 1}, flash.Worker{ID: 2}
	_ = ix.Apply(p.StoreEvent(w1, 0, 2, 0))
	for _, w := range []flash.Worker{w1, w2} {
		if err := ix.Predict(w, flash.Query{Locals: p}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	var snap bytes.Buffer
	if _, err := ix.Dump(&snap, w1); err != nil {
		t.Fatal(err)
	}
	if err := ix.Restore(&snap); err != nil {
		t.Fatal(err)
	}
	ix.Flush()
	var sc flash.Scores
	ix.FindMatches(flash.Query{Locals: p}, &sc)
	sc.Sort()
	want := []flash.Match{
		{Worker: w2, Depth: 6, Tokens: 6 * flash.DefaultBlockSize, Predicted: 6},
		{Worker: w1, Depth: 2, Tokens: 2 * flash.DefaultBlockSize, Blocks: 2},
	}
	if len(sc.Matches) != 2 || sc.Matches[0] != want[0] || sc.Matches[1] != want[1] {
		t.Fatalf("after Restore: %+v, want %+v", sc.Matches, want)
	}
}
