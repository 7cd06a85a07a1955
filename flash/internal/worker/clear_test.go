package worker

import (
	"testing"
	"unsafe"

	"github.com/flashindexer/flashindexer/flash/internal/entry"
	"github.com/flashindexer/flashindexer/internal/keyhash"
	"github.com/flashindexer/flashindexer/shardmap"
)

// A Cleared worker keeps up to 4,096 nodes of memory (or its hint's) for
// its next fill, and lets the collector have the chunks past them: none is
// left in the slice's spare capacity, where nothing counts it
// (AddMemory) and the collector cannot free it.
func TestClear_ReleasesChunksPastWhatItKeeps(t *testing.T) {
	o := &Owner{W: entry.Writer{Sets: &entry.Sets{Inline: true}, Tabs: []shardmap.Writer{shardmap.New().SoleWriter()}, Excl: true}, K0: 1, K1: 3}
	ws := o.New(1, 0, 0)
	const events, per = 60, 100 // 6,000 nodes: 12 chunks
	for e := range events {
		blocks := make([]Block, per)
		for i := range blocks {
			blocks[i] = Block{Hash: uint64(1 + e*per + i), Local: uint64(7 + e*per + i)}
		}
		if err := o.Prepare(ws, 0, false, blocks, 1<<20); err != nil {
			t.Fatal(err)
		}
		o.Commit(ws)
	}
	if len(ws.chunks) <= 4096>>nodeChunkBits {
		t.Fatalf("%d chunks before Clear: the test needs more than it keeps", len(ws.chunks))
	}
	o.Clear(ws)
	var m Memory
	ws.AddMemory(&m)
	if want := 4096 * int(unsafe.Sizeof(node{})); m.Nodes != want {
		t.Fatalf("%d bytes of nodes kept, want %d", m.Nodes, want)
	}
	for k, c := range ws.chunks[len(ws.chunks):cap(ws.chunks)] {
		if c != nil {
			t.Fatalf("chunk %d (%d nodes) still held past the %d kept", len(ws.chunks)+k, len(c), len(ws.chunks))
		}
	}
}

// A lane's batch scratch grows by doubling, not to each new longest batch,
// and never past what TrimScratch keeps unless one batch needs it.
func TestScratchSize_Doubles(t *testing.T) {
	grows, have := 0, 0
	for n := 1; n <= keepScratch; n++ {
		if have < n {
			next := scratchSize(n, have)
			if next < n || next > keepScratch {
				t.Fatalf("batch of %d, room for %d: grows to %d", n, have, next)
			}
			have = next
			grows++
		}
	}
	if grows > 7 { // 64, 128, …, 4096
		t.Errorf("batches of 1 to %d blocks grew the scratch %d times", keepScratch, grows)
	}
	if got := scratchSize(keepScratch+5, keepScratch); got != keepScratch+5 {
		t.Errorf("a batch of %d blocks: room for %d", keepScratch+5, got)
	}
}

// TrimScratch empties Gone and lets go of each scratch buffer that one
// large event grew past what it keeps, whichever it is, and of no other.
func TestTrimScratch_ShedsWhatGrew(t *testing.T) {
	big := keepScratch + 1
	for which := range 6 {
		o := &Owner{
			pending: make([]pendingBlock, 10), stack: make([]uint32, 10), keys: make([]keyhash.Key, 10),
			Gone: make([]Content, 3, 10), checkKids: make([]uint32, 10), checkOver: make([]int, 10),
		}
		switch which {
		case 0:
			o.pending = make([]pendingBlock, big)
		case 1:
			o.stack = make([]uint32, big)
		case 2:
			o.keys = make([]keyhash.Key, big)
		case 3:
			o.Gone = make([]Content, 3, big)
		case 4:
			o.checkKids = make([]uint32, 1<<20+1)
		case 5:
			o.checkOver = make([]int, 1<<20+1)
		}
		o.TrimScratch()
		caps := []int{cap(o.pending), cap(o.stack), cap(o.keys), cap(o.Gone), cap(o.checkKids), cap(o.checkOver)}
		for k, c := range caps {
			want := 10
			if k == which {
				want = 0
			}
			if c != want {
				t.Fatalf("buffer %d grown: buffer %d's capacity %d after, want %d", which, k, c, want)
			}
		}
		if len(o.Gone) != 0 {
			t.Fatalf("buffer %d grown: Gone holds %d after TrimScratch", which, len(o.Gone))
		}
	}
}
