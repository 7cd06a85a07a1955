package flash

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/flashindexer/flashindexer/flash/internal/entry"
	"github.com/flashindexer/flashindexer/flash/internal/lane"
	"github.com/flashindexer/flashindexer/flash/internal/search"
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
		{"search.Tally", unsafe.Sizeof(search.Tally{}), 16 * 64, "a cache line each"},
		// Hashes pass to the internal packages as words (the API's other
		// mirrors are checked as it compiles: layout.go).
		{"ExternalHash", unsafe.Sizeof(ExternalHash(0)), 8, "a word"},
		{"LocalHash", unsafe.Sizeof(LocalHash(0)), 8, "a word"},
		{"SeqHash", unsafe.Sizeof(SeqHash(0)), 8, "a word"},
	} {
		if c.size != c.want {
			t.Errorf("%s is %d bytes, want %d (%s)", c.name, c.size, c.want, c.why)
		}
	}
}

// Stats is the lanes' counters in place: all uint64 words, field i the
// counter numbered i.
func TestStats_Counters(t *testing.T) {
	typ := reflect.TypeFor[Stats]()
	if typ.Size() != uintptr(typ.NumField())*8 || int(lane.NumCounters) != typ.NumField() {
		t.Fatalf("Stats is %d bytes in %d fields; there are %d counters", typ.Size(), typ.NumField(), lane.NumCounters)
	}
	for i := range typ.NumField() {
		if f := typ.Field(i); f.Type.Kind() != reflect.Uint64 || f.Offset != uintptr(8*i) {
			t.Errorf("field %s: %v at %d", f.Name, f.Type, f.Offset)
		}
	}
	var s Stats
	for _, c := range []struct {
		name  string
		field uintptr
		c     lane.Counter
	}{
		{"EventsApplied", unsafe.Offsetof(s.EventsApplied), lane.EventsApplied},
		{"EventsRejected", unsafe.Offsetof(s.EventsRejected), lane.EventsRejected},
		{"BlocksStored", unsafe.Offsetof(s.BlocksStored), lane.BlocksStored},
		{"BlocksDuplicate", unsafe.Offsetof(s.BlocksDuplicate), lane.BlocksDuplicate},
		{"BlocksRemoved", unsafe.Offsetof(s.BlocksRemoved), lane.BlocksRemoved},
		{"RemovesUnknown", unsafe.Offsetof(s.RemovesUnknown), lane.RemovesUnknown},
		{"Clears", unsafe.Offsetof(s.Clears), lane.Clears},
		{"WorkersRemoved", unsafe.Offsetof(s.WorkersRemoved), lane.WorkersRemoved},
		{"RejectedUnknownParent", unsafe.Offsetof(s.RejectedUnknownParent), lane.RejectedUnknownParent},
		{"RejectedHashConflict", unsafe.Offsetof(s.RejectedHashConflict), lane.RejectedHashConflict},
		{"RejectedEmpty", unsafe.Offsetof(s.RejectedEmpty), lane.RejectedEmpty},
		{"RejectedTooLarge", unsafe.Offsetof(s.RejectedTooLarge), lane.RejectedTooLarge},
		{"RejectedTooDeep", unsafe.Offsetof(s.RejectedTooDeep), lane.RejectedTooDeep},
		{"RejectedTooManyWorkers", unsafe.Offsetof(s.RejectedTooManyWorkers), lane.RejectedTooManyWorkers},
		{"RejectedBadKind", unsafe.Offsetof(s.RejectedBadKind), lane.RejectedBadKind},
		{"RejectedClosed", unsafe.Offsetof(s.RejectedClosed), lane.RejectedClosed},
		{"RejectedQueueFull", unsafe.Offsetof(s.RejectedQueueFull), lane.RejectedQueueFull},
		{"Queries", unsafe.Offsetof(s.Queries), lane.Queries},
		{"QueryBlocks", unsafe.Offsetof(s.QueryBlocks), lane.QueryBlocks},
		{"EventGaps", unsafe.Offsetof(s.EventGaps), lane.EventGaps},
		{"EventRestarts", unsafe.Offsetof(s.EventRestarts), lane.EventRestarts},
		{"StoredApplied", unsafe.Offsetof(s.StoredApplied), lane.StoredApplied},
		{"RemovedApplied", unsafe.Offsetof(s.RemovedApplied), lane.RemovedApplied},
		{"StoredRejected", unsafe.Offsetof(s.StoredRejected), lane.StoredRejected},
		{"RemovedRejected", unsafe.Offsetof(s.RemovedRejected), lane.RemovedRejected},
		{"ClearedRejected", unsafe.Offsetof(s.ClearedRejected), lane.ClearedRejected},
		{"Predictions", unsafe.Offsetof(s.Predictions), lane.Predictions},
		{"PredictionsRejected", unsafe.Offsetof(s.PredictionsRejected), lane.PredictionsRejected},
		{"QueryHits", unsafe.Offsetof(s.QueryHits), lane.QueryHits},
		{"QueryMatchedBlocks", unsafe.Offsetof(s.QueryMatchedBlocks), lane.QueryMatchedBlocks},
	} {
		if int(c.field/8) != int(c.c) {
			t.Errorf("Stats.%s is word %d, its counter %d", c.name, c.field/8, c.c)
		}
	}
}
