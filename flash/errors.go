package flash

import (
	"github.com/flashindexer/flashindexer/flash/internal/lane"
	"github.com/flashindexer/flashindexer/flash/internal/worker"
)

// Errors returned by Apply (in synchronous mode, or for admission checks) and
// reported to the rejection callback. Every rejection is also counted in Stats.
var (
	// ErrUnknownParent: a Stored event names a parent that this worker does not
	// hold. Nothing of the event is applied.
	ErrUnknownParent = worker.ErrUnknownParent
	// ErrHashConflict: a Stored event carries an external hash that the worker
	// already holds at another position, or with other content (another
	// sequence hash), or twice in one batch. Nothing of the event is applied.
	ErrHashConflict = worker.ErrHashConflict
	// ErrEmptyEvent: a Stored or Removed event with no blocks.
	ErrEmptyEvent = lane.ErrEmptyEvent
	// ErrBatchTooLarge: an event with more blocks than the configured bound.
	ErrBatchTooLarge = lane.ErrBatchTooLarge
	// ErrTooDeep: a Stored event would place a block past the configured
	// maximum depth.
	ErrTooDeep = worker.ErrTooDeep
	// ErrTooManyWorkers: a new worker's first block arrives while MaxWorkers
	// workers are already known. Nothing of the event is applied.
	ErrTooManyWorkers = lane.ErrTooManyWorkers
	// ErrBadKind: an event whose Kind is none of the known kinds.
	ErrBadKind = lane.ErrBadKind
	// ErrClosed: the index was closed.
	ErrClosed = lane.ErrClosed
	// ErrBadTTL: a prediction whose ttl is not positive.
	ErrBadTTL = lane.ErrBadTTL
	// ErrQueueFull: TryApply found the owning writer's queue full.
	ErrQueueFull = lane.ErrQueueFull
	// ErrBadTier: an event names a tier past the index's (Config.Tiers).
	// Nothing of the event is applied.
	ErrBadTier = lane.ErrBadTier
)
