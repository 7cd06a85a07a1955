package flash

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/entry"
	"github.com/flashindexer/flashindexer/internal/lane"
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
		{"search.Tally", unsafe.Sizeof(search.Tally{}), 16 * 64, "a cache line each"},
		// Events' blocks and ids, queries' hashes and answers pass to and
		// from the internal packages as their own types, in place (view).
		{"Block", unsafe.Sizeof(Block{}), unsafe.Sizeof(worker.Block{}), "worker.Block's"},
		{"Block.Local", unsafe.Offsetof(Block{}.Local), unsafe.Offsetof(worker.Block{}.Local), "worker.Block's"},
		{"Match", unsafe.Sizeof(Match{}), unsafe.Sizeof(search.Hit{}), "search.Hit's"},
		{"Match.Worker.DPRank", unsafe.Offsetof(Match{}.Worker) + unsafe.Offsetof(Worker{}.DPRank), unsafe.Offsetof(search.Hit{}.Rank), "search.Hit's"},
		{"Match.Depth", unsafe.Offsetof(Match{}.Depth), unsafe.Offsetof(search.Hit{}.Depth), "search.Hit's"},
		{"Match.Tokens", unsafe.Offsetof(Match{}.Tokens), unsafe.Offsetof(search.Hit{}.Tokens), "search.Hit's"},
		{"Match.Blocks", unsafe.Offsetof(Match{}.Blocks), unsafe.Offsetof(search.Hit{}.Blocks), "search.Hit's"},
		{"Match.Predicted", unsafe.Offsetof(Match{}.Predicted), unsafe.Offsetof(search.Hit{}.Predicted), "search.Hit's"},
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
	} {
		if int(c.field/8) != int(c.c) {
			t.Errorf("Stats.%s is word %d, its counter %d", c.name, c.field/8, c.c)
		}
	}
}

// Events pass to the lanes in place, as lane.Event.
func TestLayout_Event(t *testing.T) {
	var e Event
	var l lane.Event
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"size", unsafe.Sizeof(e), unsafe.Sizeof(l)},
		{"Kind", unsafe.Sizeof(e.Kind), unsafe.Sizeof(l.Kind)},
		{"Worker", unsafe.Offsetof(e.Worker), unsafe.Offsetof(l.Worker)},
		{"ID", unsafe.Offsetof(e.ID), unsafe.Offsetof(l.ID)},
		{"Parent", unsafe.Offsetof(e.Parent), unsafe.Offsetof(l.Parent)},
		{"HasParent", unsafe.Offsetof(e.HasParent), unsafe.Offsetof(l.HasParent)},
		{"Blocks", unsafe.Offsetof(e.Blocks), unsafe.Offsetof(l.Blocks)},
		{"Hashes", unsafe.Offsetof(e.Hashes), unsafe.Offsetof(l.Hashes)},
	} {
		if c.got != c.want {
			t.Errorf("Event.%s at %d, lane.Event's at %d", c.name, c.got, c.want)
		}
	}
	for _, k := range []struct {
		k EventKind
		l lane.Kind
	}{{KindStored, lane.Stored}, {KindRemoved, lane.Removed}, {KindCleared, lane.Cleared}} {
		if uint8(k.k) != uint8(k.l) {
			t.Errorf("%v is %d, lane's %d", k.k, k.k, k.l)
		}
	}
}
