package flash_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
)

// liveHeap returns the live heap after a full collection.
func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// A writer's queue does not keep the largest events it carried: after a
// burst of large Removed events is applied, the ring's copies are released.
// Before, each of the 1,024 slots kept its 20,000-hash buffer (161 MiB).
func TestFlash_QueueReleasesLargeBatches(t *testing.T) {
	ix := flash.New(flash.WithWriters(1), flash.WithQueueSize(1024))
	defer ix.Close()
	hashes := make([]flash.ExternalHash, 20000)
	for i := range hashes {
		hashes[i] = flash.ExternalHash(i + 1)
	}
	before := liveHeap()
	for i := 0; i < 1024; i++ {
		if err := ix.Apply(flash.RemovedEvent(flash.Worker{ID: uint64(i)}, hashes...)); err != nil {
			t.Fatal(err)
		}
	}
	ix.Flush()
	after := liveHeap()
	runtime.KeepAlive(ix)
	grown := int64(after) - int64(before)
	t.Logf("live heap %d → %d bytes after 1,024 events of 20,000 hashes", before, after)
	if grown > 4<<20 {
		t.Fatalf("the queue kept %d MiB after its events were applied", grown>>20)
	}
}

// closingReader closes the index on its first read: Close lands while
// Restore reads its input, after Restore checked that the index was open.
type closingReader struct {
	ix   *flash.Indexer
	r    io.Reader
	done bool
}

func (c *closingReader) Read(p []byte) (int, error) {
	if !c.done {
		c.done = true
		_ = c.ix.Close()
	}
	return c.r.Read(p)
}

// Restore never changes an index closed before it applies: it returns
// ErrClosed and the index keeps no worker, with writers and without.
func TestSnapshot_RestoreAfterCloseRejected(t *testing.T) {
	src := flash.New(flash.WithWriters(0))
	p := flashtest.Seqs(3, 20)
	for w := 0; w < 4; w++ {
		_ = src.Apply(p.StoreEvent(flash.Worker{ID: uint64(w)}, 0, 10+w, 0))
	}
	var snap bytes.Buffer
	if _, err := src.Dump(&snap); err != nil {
		t.Fatal(err)
	}
	for _, writers := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("writers=%d", writers), func(t *testing.T) {
			ix := flash.New(flash.WithWriters(writers))
			err := ix.Restore(&closingReader{ix: ix, r: bytes.NewReader(snap.Bytes())})
			if !errors.Is(err, flash.ErrClosed) {
				t.Fatalf("Restore into an index closed meanwhile: %v, want ErrClosed", err)
			}
			if n := ix.Workers(); n != 0 {
				t.Fatalf("%d workers appeared in a closed index", n)
			}
			var sc flash.Scores
			ix.FindMatches(flash.Query{Locals: p}, &sc)
			if len(sc.Matches) != 0 {
				t.Fatalf("a closed index answers %v", sc.Matches)
			}
		})
	}
}

// Memory follows content: one deep Stored event (200,000 blocks, within
// the default depth) raises the heap by its levels and tables; once the
// worker is cleared and removed the heap returns to within a few MiB of an
// empty index's. Before, the shared table kept every level (576 B each)
// and every emptied small table: 1,000 MiB stayed after an event of 1e6.
func TestFlash_MemoryFollowsContent(t *testing.T) {
	for _, writers := range []int{0, 1} {
		t.Run(fmt.Sprintf("writers=%d", writers), func(t *testing.T) {
			n := 200000
			if testing.Short() {
				n = 50000 // before: 52 MiB stayed
			}
			ix := flash.New(flash.WithWriters(writers), flash.WithMaxWorkers(4))
			defer ix.Close()
			w := flash.Worker{ID: 1}
			p := flashtest.Seqs(21, n)
			base := liveHeap()
			if err := ix.Apply(p.StoreEvent(w, 0, n, 0)); err != nil {
				t.Fatal(err)
			}
			ix.Flush()
			full := liveHeap()
			if got := ix.BlockCount(w); got != n {
				t.Fatalf("%d blocks held, want %d", got, n)
			}
			_ = ix.Apply(flash.ClearedEvent(w))
			_ = ix.RemoveWorker(w.ID)
			ix.Flush()
			after := liveHeap()
			runtime.KeepAlive(p)
			t.Logf("live heap: empty %d MiB, holding %d blocks %d MiB, after clear %d MiB", base>>20, n, full>>20, after>>20)
			// The arena keeps its slots for reuse: 32 bytes a block.
			if kept := int64(after) - int64(base); kept > int64(n)*48+4<<20 {
				t.Fatalf("%d MiB stay after the content left (%d MiB while held)", kept>>20, (int64(full)-int64(base))>>20)
			}
			// The index still works at every depth it released.
			_ = ix.Apply(p.StoreEvent(w, 0, n, 0))
			ix.Flush()
			var sc flash.Scores
			ix.FindMatches(flash.Query{Locals: p}, &sc)
			if len(sc.Matches) != 1 || sc.Matches[0].Depth != n {
				t.Fatalf("after the release: %v", sc.Matches)
			}
		})
	}
}

// Normalize lowers a MaxDepth past MaxDepthLimit to it (block positions are
// 32-bit in Flash's nodes) and keeps any other, and an index configured
// past it runs with the limit.
func TestConfig_MaxDepthBounded(t *testing.T) {
	for _, c := range []struct{ in, want int }{
		{flash.MaxDepthLimit + 1, flash.MaxDepthLimit},
		{int(^uint(0) >> 1), flash.MaxDepthLimit},
		{flash.MaxDepthLimit, flash.MaxDepthLimit},
		{flash.DefaultMaxDepth, flash.DefaultMaxDepth},
		{0, flash.DefaultMaxDepth},
	} {
		if got := (flash.Config{MaxDepth: c.in}).Normalize().MaxDepth; got != c.want {
			t.Errorf("Normalize of MaxDepth %d: %d, want %d", c.in, got, c.want)
		}
	}
	ix := flash.New(flash.WithMaxDepth(int(^uint(0)>>1)), flash.WithWriters(0))
	defer ix.Close()
	if got := ix.Config().MaxDepth; got != flash.MaxDepthLimit {
		t.Fatalf("an index's MaxDepth %d, want %d", got, flash.MaxDepthLimit)
	}
}
