package flash

import "errors"

// Errors returned by Apply (in synchronous mode, or for admission checks) and
// reported to the rejection callback. Every rejection is also counted in Stats.
var (
	// ErrUnknownParent: a Stored event names a parent that this worker does not
	// hold. Nothing of the event is applied.
	ErrUnknownParent = errors.New("flash: stored event's parent is not held by the worker")
	// ErrHashConflict: a Stored event carries an external hash that the worker
	// already holds at another position, or with other content (another
	// sequence hash), or twice in one batch. Nothing of the event is applied.
	ErrHashConflict = errors.New("flash: external hash already held at another place")
	// ErrEmptyEvent: a Stored or Removed event with no blocks.
	ErrEmptyEvent = errors.New("flash: event carries no blocks")
	// ErrBatchTooLarge: an event with more blocks than the configured bound.
	ErrBatchTooLarge = errors.New("flash: event carries more blocks than allowed")
	// ErrTooDeep: a Stored event would place a block past the configured
	// maximum depth.
	ErrTooDeep = errors.New("flash: block position past the configured maximum depth")
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
