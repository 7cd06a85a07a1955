package flash

import (
	"unsafe"

	"github.com/flashindexer/flashindexer/flash/internal/lane"
	"github.com/flashindexer/flashindexer/flash/internal/search"
	"github.com/flashindexer/flashindexer/flash/internal/worker"
)

// The API's types pass to the internal packages in place, through unsafe:
// these fail to compile unless each pair has one layout ([1]int{}[a-b]
// builds only when a == b).
var (
	// Blocks of a Stored event, as worker.Block.
	_ = [1]int{}[unsafe.Sizeof(Block{})-unsafe.Sizeof(worker.Block{})]
	_ = [1]int{}[unsafe.Offsetof(Block{}.Local)-unsafe.Offsetof(worker.Block{}.Local)]

	// Answers, as search.Hit.
	_ = [1]int{}[unsafe.Sizeof(Match{})-unsafe.Sizeof(search.Hit{})]
	_ = [1]int{}[unsafe.Offsetof(Match{}.Worker)+unsafe.Offsetof(Worker{}.DPRank)-unsafe.Offsetof(search.Hit{}.Rank)]
	_ = [1]int{}[unsafe.Offsetof(Match{}.Depth)-unsafe.Offsetof(search.Hit{}.Depth)]
	_ = [1]int{}[unsafe.Offsetof(Match{}.Tokens)-unsafe.Offsetof(search.Hit{}.Tokens)]
	_ = [1]int{}[unsafe.Offsetof(Match{}.Blocks)-unsafe.Offsetof(search.Hit{}.Blocks)]
	_ = [1]int{}[unsafe.Offsetof(Match{}.Predicted)-unsafe.Offsetof(search.Hit{}.Predicted)]
	_ = [1]int{}[unsafe.Offsetof(Match{}.TierDepth)-unsafe.Offsetof(search.Hit{}.Tiers)]

	// Workers, as lane.Worker.
	_ = [1]int{}[unsafe.Sizeof(Worker{})-unsafe.Sizeof(lane.Worker{})]
	_ = [1]int{}[unsafe.Offsetof(Worker{}.DPRank)-unsafe.Offsetof(lane.Worker{}.DPRank)]

	// Events, as lane.Event.
	_ = [1]int{}[unsafe.Sizeof(Event{})-unsafe.Sizeof(lane.Event{})]
	_ = [1]int{}[unsafe.Sizeof(Event{}.Kind)-unsafe.Sizeof(lane.Event{}.Kind)]
	_ = [1]int{}[unsafe.Offsetof(Event{}.Worker)-unsafe.Offsetof(lane.Event{}.Worker)]
	_ = [1]int{}[unsafe.Offsetof(Event{}.ID)-unsafe.Offsetof(lane.Event{}.ID)]
	_ = [1]int{}[unsafe.Offsetof(Event{}.Parent)-unsafe.Offsetof(lane.Event{}.Parent)]
	_ = [1]int{}[unsafe.Offsetof(Event{}.HasParent)-unsafe.Offsetof(lane.Event{}.HasParent)]
	_ = [1]int{}[unsafe.Offsetof(Event{}.Tier)-unsafe.Offsetof(lane.Event{}.Tier)]
	_ = [1]int{}[unsafe.Offsetof(Event{}.TierOnly)-unsafe.Offsetof(lane.Event{}.TierOnly)]
	_ = [1]int{}[unsafe.Offsetof(Event{}.Blocks)-unsafe.Offsetof(lane.Event{}.Blocks)]
	_ = [1]int{}[unsafe.Offsetof(Event{}.Hashes)-unsafe.Offsetof(lane.Event{}.Hashes)]

	// Event kinds, as lane's.
	_ = [1]int{}[uint8(KindStored)-uint8(lane.Stored)]
	_ = [1]int{}[uint8(KindRemoved)-uint8(lane.Removed)]
	_ = [1]int{}[uint8(KindCleared)-uint8(lane.Cleared)]

	// Stats, as lane.Counts: one word a counter, each field at its
	// counter (the XORs are 0 only where they match).
	_ = [1]int{}[unsafe.Sizeof(Stats{})-unsafe.Sizeof(lane.Counts{})]
	_ = [1]int{}[(unsafe.Offsetof(Stats{}.EventsApplied)/8^uintptr(lane.EventsApplied))|(unsafe.Offsetof(Stats{}.EventsRejected)/8^uintptr(lane.EventsRejected))|(unsafe.Offsetof(Stats{}.BlocksStored)/8^uintptr(lane.BlocksStored))|
		(unsafe.Offsetof(Stats{}.BlocksDuplicate)/8^uintptr(lane.BlocksDuplicate))|(unsafe.Offsetof(Stats{}.BlocksRemoved)/8^uintptr(lane.BlocksRemoved))|(unsafe.Offsetof(Stats{}.RemovesUnknown)/8^uintptr(lane.RemovesUnknown))|
		(unsafe.Offsetof(Stats{}.Clears)/8^uintptr(lane.Clears))|(unsafe.Offsetof(Stats{}.WorkersRemoved)/8^uintptr(lane.WorkersRemoved))|(unsafe.Offsetof(Stats{}.RejectedUnknownParent)/8^uintptr(lane.RejectedUnknownParent))|
		(unsafe.Offsetof(Stats{}.RejectedHashConflict)/8^uintptr(lane.RejectedHashConflict))|(unsafe.Offsetof(Stats{}.RejectedEmpty)/8^uintptr(lane.RejectedEmpty))|(unsafe.Offsetof(Stats{}.RejectedTooLarge)/8^uintptr(lane.RejectedTooLarge))|
		(unsafe.Offsetof(Stats{}.RejectedTooDeep)/8^uintptr(lane.RejectedTooDeep))|(unsafe.Offsetof(Stats{}.RejectedTooManyWorkers)/8^uintptr(lane.RejectedTooManyWorkers))|(unsafe.Offsetof(Stats{}.RejectedBadKind)/8^uintptr(lane.RejectedBadKind))|
		(unsafe.Offsetof(Stats{}.RejectedClosed)/8^uintptr(lane.RejectedClosed))|(unsafe.Offsetof(Stats{}.RejectedQueueFull)/8^uintptr(lane.RejectedQueueFull))|(unsafe.Offsetof(Stats{}.Queries)/8^uintptr(lane.Queries))|
		(unsafe.Offsetof(Stats{}.QueryBlocks)/8^uintptr(lane.QueryBlocks))|(unsafe.Offsetof(Stats{}.EventGaps)/8^uintptr(lane.EventGaps))|(unsafe.Offsetof(Stats{}.EventRestarts)/8^uintptr(lane.EventRestarts))|
		(unsafe.Offsetof(Stats{}.StoredApplied)/8^uintptr(lane.StoredApplied))|(unsafe.Offsetof(Stats{}.RemovedApplied)/8^uintptr(lane.RemovedApplied))|(unsafe.Offsetof(Stats{}.StoredRejected)/8^uintptr(lane.StoredRejected))|
		(unsafe.Offsetof(Stats{}.RemovedRejected)/8^uintptr(lane.RemovedRejected))|(unsafe.Offsetof(Stats{}.ClearedRejected)/8^uintptr(lane.ClearedRejected))|(unsafe.Offsetof(Stats{}.Predictions)/8^uintptr(lane.Predictions))|
		(unsafe.Offsetof(Stats{}.PredictionsRejected)/8^uintptr(lane.PredictionsRejected))|(unsafe.Offsetof(Stats{}.QueryHits)/8^uintptr(lane.QueryHits))|(unsafe.Offsetof(Stats{}.QueryMatchedBlocks)/8^uintptr(lane.QueryMatchedBlocks))|
		(unsafe.Offsetof(Stats{}.RejectedBadTier)/8^uintptr(lane.RejectedBadTier))]
)
