package flash

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/entry"
	"github.com/flashindexer/flashindexer/internal/search"
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
		// Events' blocks and ids, queries' hashes and answers pass to and
		// from the internal packages as their own types, in place (view).
		{"Block", unsafe.Sizeof(Block{}), unsafe.Sizeof(worker.Block{}), "worker.Block's"},
		{"Block.Local", unsafe.Offsetof(Block{}.Local), unsafe.Offsetof(worker.Block{}.Local), "worker.Block's"},
		{"Match", unsafe.Sizeof(Match{}), unsafe.Sizeof(search.Hit{}), "search.Hit's"},
		{"Match.Worker.DPRank", unsafe.Offsetof(Match{}.Worker) + unsafe.Offsetof(Worker{}.DPRank), unsafe.Offsetof(search.Hit{}.Rank), "search.Hit's"},
		{"Match.Depth", unsafe.Offsetof(Match{}.Depth), unsafe.Offsetof(search.Hit{}.Depth), "search.Hit's"},
		{"Match.Tokens", unsafe.Offsetof(Match{}.Tokens), unsafe.Offsetof(search.Hit{}.Tokens), "search.Hit's"},
		{"Match.Blocks", unsafe.Offsetof(Match{}.Blocks), unsafe.Offsetof(search.Hit{}.Blocks), "search.Hit's"},
		{"ExternalHash", unsafe.Sizeof(ExternalHash(0)), 8, "a word"},
		{"LocalHash", unsafe.Sizeof(LocalHash(0)), 8, "a word"},
		{"SeqHash", unsafe.Sizeof(SeqHash(0)), 8, "a word"},
	} {
		if c.size != c.want {
			t.Errorf("%s is %d bytes, want %d (%s)", c.name, c.size, c.want, c.why)
		}
	}
}

// Stats is all uint64 words, so a tally's word i is the field at offset 8i.
func TestStats_Words(t *testing.T) {
	typ := reflect.TypeFor[Stats]()
	if typ.Size() != uintptr(typ.NumField())*8 || len(tally{}) != typ.NumField() {
		t.Fatalf("Stats is %d bytes in %d fields; tally has %d words", typ.Size(), typ.NumField(), len(tally{}))
	}
	for i := range typ.NumField() {
		if f := typ.Field(i); f.Type.Kind() != reflect.Uint64 || f.Offset != uintptr(8*i) {
			t.Errorf("field %s: %v at %d", f.Name, f.Type, f.Offset)
		}
	}
}
