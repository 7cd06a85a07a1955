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
