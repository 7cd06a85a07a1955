package flash

import (
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/lane"
	"github.com/flashindexer/flashindexer/internal/search"
	"github.com/flashindexer/flashindexer/internal/worker"
)

// The API's types pass to and from the internal packages in place, through
// unsafe (view, Stats, Event): these declarations fail to compile unless
// each pair has one layout. same(a, b) is an array of a−b elements and
// same(b, a) one of b−a, so both build only when a == b (a negative
// constant overflows uintptr).
var (
	// Blocks of a Stored event, as worker.Block.
	_ [unsafe.Sizeof(Block{}) - unsafe.Sizeof(worker.Block{})]byte
	_ [unsafe.Sizeof(worker.Block{}) - unsafe.Sizeof(Block{})]byte
	_ [unsafe.Offsetof(Block{}.Local) - unsafe.Offsetof(worker.Block{}.Local)]byte
	_ [unsafe.Offsetof(worker.Block{}.Local) - unsafe.Offsetof(Block{}.Local)]byte

	// Answers, as search.Hit.
	_ [unsafe.Sizeof(Match{}) - unsafe.Sizeof(search.Hit{})]byte
	_ [unsafe.Sizeof(search.Hit{}) - unsafe.Sizeof(Match{})]byte
	_ [unsafe.Offsetof(Match{}.Worker) + unsafe.Offsetof(Worker{}.DPRank) - unsafe.Offsetof(search.Hit{}.Rank)]byte
	_ [unsafe.Offsetof(search.Hit{}.Rank) - unsafe.Offsetof(Match{}.Worker) - unsafe.Offsetof(Worker{}.DPRank)]byte
	_ [unsafe.Offsetof(Match{}.Depth) - unsafe.Offsetof(search.Hit{}.Depth)]byte
	_ [unsafe.Offsetof(search.Hit{}.Depth) - unsafe.Offsetof(Match{}.Depth)]byte
	_ [unsafe.Offsetof(Match{}.Tokens) - unsafe.Offsetof(search.Hit{}.Tokens)]byte
	_ [unsafe.Offsetof(search.Hit{}.Tokens) - unsafe.Offsetof(Match{}.Tokens)]byte
	_ [unsafe.Offsetof(Match{}.Blocks) - unsafe.Offsetof(search.Hit{}.Blocks)]byte
	_ [unsafe.Offsetof(search.Hit{}.Blocks) - unsafe.Offsetof(Match{}.Blocks)]byte
	_ [unsafe.Offsetof(Match{}.Predicted) - unsafe.Offsetof(search.Hit{}.Predicted)]byte
	_ [unsafe.Offsetof(search.Hit{}.Predicted) - unsafe.Offsetof(Match{}.Predicted)]byte

	// Workers, as lane.Worker.
	_ [unsafe.Sizeof(Worker{}) - unsafe.Sizeof(lane.Worker{})]byte
	_ [unsafe.Sizeof(lane.Worker{}) - unsafe.Sizeof(Worker{})]byte
	_ [unsafe.Offsetof(Worker{}.DPRank) - unsafe.Offsetof(lane.Worker{}.DPRank)]byte
	_ [unsafe.Offsetof(lane.Worker{}.DPRank) - unsafe.Offsetof(Worker{}.DPRank)]byte

	// Events, as lane.Event.
	_ [unsafe.Sizeof(Event{}) - unsafe.Sizeof(lane.Event{})]byte
	_ [unsafe.Sizeof(lane.Event{}) - unsafe.Sizeof(Event{})]byte
	_ [unsafe.Sizeof(Event{}.Kind) - unsafe.Sizeof(lane.Event{}.Kind)]byte
	_ [unsafe.Sizeof(lane.Event{}.Kind) - unsafe.Sizeof(Event{}.Kind)]byte
	_ [unsafe.Offsetof(Event{}.Worker) - unsafe.Offsetof(lane.Event{}.Worker)]byte
	_ [unsafe.Offsetof(lane.Event{}.Worker) - unsafe.Offsetof(Event{}.Worker)]byte
	_ [unsafe.Offsetof(Event{}.ID) - unsafe.Offsetof(lane.Event{}.ID)]byte
	_ [unsafe.Offsetof(lane.Event{}.ID) - unsafe.Offsetof(Event{}.ID)]byte
	_ [unsafe.Offsetof(Event{}.Parent) - unsafe.Offsetof(lane.Event{}.Parent)]byte
	_ [unsafe.Offsetof(lane.Event{}.Parent) - unsafe.Offsetof(Event{}.Parent)]byte
	_ [unsafe.Offsetof(Event{}.HasParent) - unsafe.Offsetof(lane.Event{}.HasParent)]byte
	_ [unsafe.Offsetof(lane.Event{}.HasParent) - unsafe.Offsetof(Event{}.HasParent)]byte
	_ [unsafe.Offsetof(Event{}.Blocks) - unsafe.Offsetof(lane.Event{}.Blocks)]byte
	_ [unsafe.Offsetof(lane.Event{}.Blocks) - unsafe.Offsetof(Event{}.Blocks)]byte
	_ [unsafe.Offsetof(Event{}.Hashes) - unsafe.Offsetof(lane.Event{}.Hashes)]byte
	_ [unsafe.Offsetof(lane.Event{}.Hashes) - unsafe.Offsetof(Event{}.Hashes)]byte

	// Event kinds, as lane's.
	_ [uint8(KindStored) - uint8(lane.Stored)]byte
	_ [uint8(lane.Stored) - uint8(KindStored)]byte
	_ [uint8(KindRemoved) - uint8(lane.Removed)]byte
	_ [uint8(lane.Removed) - uint8(KindRemoved)]byte
	_ [uint8(KindCleared) - uint8(lane.Cleared)]byte
	_ [uint8(lane.Cleared) - uint8(KindCleared)]byte

	// Stats, as lane.Counts: one word a counter, in the counters' order
	// (the first and the last, and the size; TestStats_Counters checks
	// that every field is a uint64 word).
	_ [unsafe.Sizeof(Stats{}) - unsafe.Sizeof(lane.Counts{})]byte
	_ [unsafe.Sizeof(lane.Counts{}) - unsafe.Sizeof(Stats{})]byte
	_ [unsafe.Offsetof(Stats{}.EventsApplied)/8 - uintptr(lane.EventsApplied)]byte
	_ [uintptr(lane.EventsApplied) - unsafe.Offsetof(Stats{}.EventsApplied)/8]byte
	_ [unsafe.Offsetof(Stats{}.QueryMatchedBlocks)/8 - uintptr(lane.QueryMatchedBlocks)]byte
	_ [uintptr(lane.QueryMatchedBlocks) - unsafe.Offsetof(Stats{}.QueryMatchedBlocks)/8]byte
)
