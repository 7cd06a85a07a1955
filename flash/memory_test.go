package flash_test

import (
	"testing"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
)

// Memory counts what the index holds: shared entries, nodes (ghosts
// included) and engine ids, and bytes for each part at least what those
// counts take; one-word sets have no arena entries, nor do wide sets of
// workers in slots 0 to 62, and a wide set with a worker past them has one.
func TestFlash_MemoryParts(t *testing.T) {
	for _, workers := range []int{64, 256} {
		ix := flash.New(flash.WithWriters(0), flash.WithMaxWorkers(workers))
		p := flashtest.Seqs(1, 100)
		q := flashtest.Seqs(2, 50)
		_ = ix.Apply(p.StoreEvent(flash.Worker{ID: 1}, 0, 100, 0))
		_ = ix.Apply(p.StoreEvent(flash.Worker{ID: 2}, 0, 40, 0))
		_ = ix.Apply(q.StoreEvent(flash.Worker{ID: 2}, 0, 50, 0))
		// A removal in the middle leaves a ghost: worker 2 turns complex.
		_ = ix.Apply(flash.RemovedEvent(flash.Worker{ID: 2}, p.Hash(10, 0)))
		m := ix.Memory()
		if m.Keys != 150 || m.NodeCount != 190 || m.IDCount != 189 {
			t.Fatalf("workers %d: %d keys, %d nodes, %d ids; want 150, 190, 189", workers, m.Keys, m.NodeCount, m.IDCount)
		}
		if m.Tables < 16*m.Keys || m.Nodes < 32*m.NodeCount || m.IDs < 5*m.IDCount || m.Content < 13*m.NodeCount/2 {
			t.Fatalf("workers %d: parts smaller than their contents: %+v", workers, m)
		}
		if m.Entries != 0 {
			t.Fatalf("workers %d, in slots 0 and 1: %d bytes of arena entries", workers, m.Entries)
		}
		if m.Total() != m.Tables+m.Entries+m.Nodes+m.IDs+m.Content+m.Predictions {
			t.Fatalf("Total %d of %+v", m.Total(), m)
		}
		if workers > 64 {
			// Workers in slots 2 to 64 store p's first block: the last
			// moves its entry to the arena.
			for id := uint64(3); id <= 65; id++ {
				_ = ix.Apply(p.StoreEvent(flash.Worker{ID: id}, 0, 1, 0))
			}
			if m := ix.Memory(); m.Entries == 0 || m.Keys != 150 {
				t.Fatalf("workers %d, one entry with slot 64: %d keys, %d bytes of arena entries", workers, m.Keys, m.Entries)
			}
		}
		ix.Close()
	}
}

// A worker of a few blocks keeps a few nodes: its first chunk starts at 64
// nodes and doubles as it fills (was a whole chunk, 1,024 nodes, at once).
func TestFlash_SmallWorkerSmallNodes(t *testing.T) {
	ix := flash.New(flash.WithWriters(0), flash.WithMaxWorkers(64))
	defer ix.Close()
	p := flashtest.Seqs(3, 100)
	_ = ix.Apply(p.StoreEvent(flash.Worker{ID: 1}, 0, 10, 0))
	if m := ix.Memory(); m.Nodes != 64*32 {
		t.Fatalf("10 blocks: %d bytes of nodes, want %d", m.Nodes, 64*32)
	}
	_ = ix.Apply(p.StoreEvent(flash.Worker{ID: 1}, 10, 100, 0))
	if m := ix.Memory(); m.Nodes != 128*32 || m.NodeCount != 100 {
		t.Fatalf("100 blocks: %d bytes of nodes for %d nodes, want %d", m.Nodes, m.NodeCount, 128*32)
	}
}

// The room a hinted worker sets aside in the shared tables is counted in
// Tables, and what of it no table has taken yet in TableRoom: a declared
// worker's room before its first event, less once it fills, none without a
// hint.
func TestFlash_MemoryTableRoom(t *testing.T) {
	ix := flash.New(flash.WithWriters(0), flash.WithWorkerCapacity(1000))
	defer ix.Close()
	if m := ix.Memory(); m.TableRoom != 0 {
		t.Fatalf("room with no worker: %+v", m)
	}
	w := flash.Worker{ID: 1}
	if err := ix.AddWorker(w); err != nil {
		t.Fatal(err)
	}
	declared := ix.Memory()
	if declared.TableRoom < 32*1000 || declared.Tables < declared.TableRoom {
		t.Fatalf("a worker declared for 1,000 blocks: %+v", declared)
	}
	p := flashtest.Seqs(1, 500)
	if err := ix.Apply(p.StoreEvent(w, 0, 500, 0)); err != nil {
		t.Fatal(err)
	}
	if m := ix.Memory(); m.TableRoom >= declared.TableRoom || m.Keys != 500 {
		t.Fatalf("after 500 blocks: %+v, declared %+v", m, declared)
	}
	plain := flash.New(flash.WithWriters(0))
	defer plain.Close()
	_ = plain.AddWorker(w)
	_ = plain.Apply(p.StoreEvent(w, 0, 500, 0))
	if m := plain.Memory(); m.TableRoom != 0 {
		t.Fatalf("room with no hint: %+v", m)
	}
}
