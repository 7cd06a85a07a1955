package flash

import (
	"testing"
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/entry"
	"github.com/flashindexer/flashindexer/internal/worker"
)

// The layouts the index's API and its cache lines rest on (the workers'
// nodes and maps: internal/worker's TestLayout; the shard tables:
// shardmap's).
func TestLayout(t *testing.T) {
	for _, c := range []struct {
		name       string
		size, want uintptr
		why        string
	}{
		// An entry's value is one table word: the set itself or a handle.
		{"entry.Entry", unsafe.Sizeof(entry.Entry(0)), 8, "one table word"},
		// Query counter stripes each fill a line, so readers on two cores
		// do not share one.
		{"stripe", unsafe.Sizeof(stripe{}), 64, "a cache line each"},
		// Events' blocks and ids are handed to the worker package as its
		// own types, in place (blocksOf, hashesOf).
		{"Block", unsafe.Sizeof(Block{}), unsafe.Sizeof(worker.Block{}), "worker.Block's"},
		{"Block.Local", unsafe.Offsetof(Block{}.Local), unsafe.Offsetof(worker.Block{}.Local), "worker.Block's"},
		{"ExternalHash", unsafe.Sizeof(ExternalHash(0)), 8, "a word"},
	} {
		if c.size != c.want {
			t.Errorf("%s is %d bytes, want %d (%s)", c.name, c.size, c.want, c.why)
		}
	}
}
