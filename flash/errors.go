package flash

import (
	"errors"

	"github.com/flashindexer/flashindexer/internal/worker"
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
	ErrEmptyEvent = errors.New("flash: event carries no blocks")
	// ErrBatchTooLarge: an event with more blocks than the configured bound.
	ErrBatchTooLarge = errors.New("flash: event carries more blocks than allowed")
	// ErrTooDeep: a Stored event would place a block past the configured
	// maximum depth.
	ErrTooDeep = worker.ErrTooDeep
	// ErrTooManyWorkers: a new worker's first block arrives while MaxWorkers
	// workers are already known. Nothing of the event is applied.
	ErrTooManyWorkers = errors.New("flash: too many workers")
	// ErrBadKind: an event whose Kind is none of the known kinds.
	ErrBadKind = errors.New("flash: unknown event kind")
	// ErrClosed: the index was closed.
	ErrClosed = errors.New("flash: index closed")
	// ErrQueueFull: TryApply found the owning writer's queue full.
	ErrQueueFull = errors.New("flash: writer queue full")
)
