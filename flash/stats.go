package flash

// Stats is a snapshot of an index's counters. Counters only grow.
type Stats struct {
	EventsApplied   uint64 // events accepted and applied (the sum of the three by kind)
	EventsRejected  uint64 // events rejected whole (each also under its reason below)
	BlocksStored    uint64 // blocks newly held by a worker
	BlocksDuplicate uint64 // stored blocks the worker already held (idempotent)
	BlocksRemoved   uint64 // blocks that left a worker through Removed
	RemovesUnknown  uint64 // removed hashes the worker did not hold (skipped)
	Clears          uint64 // Cleared events applied
	WorkersRemoved  uint64 // RemoveWorker calls that removed at least one rank
	// Rejections by reason: ErrUnknownParent, ErrHashConflict, ErrEmptyEvent,
	// ErrBatchTooLarge, ErrTooDeep, ErrTooManyWorkers, ErrBadKind, ErrClosed,
	// ErrQueueFull (TryApply).
	RejectedUnknownParent, RejectedHashConflict uint64
	RejectedEmpty, RejectedTooLarge             uint64
	RejectedTooDeep, RejectedTooManyWorkers     uint64
	RejectedBadKind, RejectedClosed             uint64
	RejectedQueueFull                           uint64
	Queries, QueryBlocks                        uint64 // FindMatches calls, and the query blocks they looked at
	EventGaps, EventRestarts                    uint64 // event ids that skipped ahead (events lost upstream), or went back (an engine restart)
	// Events by kind and outcome. Cleared events applied are Clears.
	// Rejections of events of no known kind, and of RemoveWorker calls,
	// are in EventsRejected (and under their reason) only.
	StoredApplied, RemovedApplied                    uint64
	StoredRejected, RemovedRejected, ClearedRejected uint64
	Predictions, PredictionsRejected                 uint64 // Predict calls applied, and rejected (for any reason; counted here only)
	// QueryHits: FindMatches calls that some worker matched (hit rate:
	// QueryHits/Queries); QueryMatchedBlocks: the deepest match's blocks,
	// summed over them (blocks found cached: QueryMatchedBlocks/QueryBlocks).
	QueryHits, QueryMatchedBlocks uint64
	// RejectedBadTier: events rejected with ErrBadTier.
	RejectedBadTier uint64
}
