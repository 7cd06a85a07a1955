package worker

import (
	"testing"

	"github.com/flashindexer/flashindexer/flash/internal/entry"
	"github.com/flashindexer/flashindexer/shardmap"
)

// A wide index's worker takes its node chunks one at a time, so it keeps
// less than a chunk past its nodes; a narrow index's worker makes them in
// slabs of as many chunks as it has (from 2 up to slabChunks), its nodes
// in long runs.
func TestChunks_FollowTheWorker(t *testing.T) {
	for _, c := range []struct {
		maxWorkers, words, nodes, chunks int
	}{
		{1024, 16, 150, 5},   // ⌈150/32⌉
		{1024, 16, 1000, 32}, // ⌈1000/32⌉
		{64, 1, 150, 2 + 2 + 4},
		{64, 1, 1000, 2 + 2 + 4 + 8 + 16},
		{64, 1, 2000, 2 + 2 + 4 + 8 + 16 + 16 + 16},
	} {
		sets := entry.New(c.maxWorkers, c.words)
		o := &Owner{W: entry.Writer{Sets: &sets, Tabs: []shardmap.Writer{shardmap.New().SoleWriter()}, Excl: true}, K0: 1, K1: 3}
		ws := o.New(1, 0, 0)
		for i := range c.nodes {
			ws.newNode(node{seq: uint64(i + 1), pos: uint32(i)})
		}
		if len(ws.chunks) != c.chunks {
			t.Errorf("MaxWorkers %d, %d nodes: %d chunks, want %d", c.maxWorkers, c.nodes, len(ws.chunks), c.chunks)
		}
		for i := range c.nodes {
			if n := ws.node(uint32(i)); n.seq != uint64(i+1) {
				t.Fatalf("MaxWorkers %d: node %d holds %d", c.maxWorkers, i, n.seq)
			}
		}
	}
}
