package flash

import (
	"errors"
	"sync/atomic"
	"unsafe"
)

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
}

// tally is Stats counted from many goroutines: word i counts the Stats
// field at byte offset 8i (every field is a uint64, TestStats_Words), so
// a counter is named by its field's offset, a constant.
type tally [unsafe.Sizeof(Stats{}) / 8]atomic.Uint64

func (t *tally) add(field uintptr, n uint64) { t[field/8].Add(n) }

// addTo adds every counter of t into s.
func (t *tally) addTo(s *Stats) {
	w := (*[len(tally{})]uint64)(unsafe.Pointer(s))
	for i := range t {
		w[i] += t[i].Load()
	}
}

// applied counts an applied event of kind k (EventsApplied is their sum,
// made by Indexer.Stats).
func (t *tally) applied(k EventKind) {
	if a, _, ok := kindFields(k); ok {
		t.add(a, 1)
	}
}

// reject counts an event of kind k rejected with err: in EventsRejected,
// under err's counter if it is one of this package's errors, and under its
// kind.
func (t *tally) reject(k EventKind, err error) {
	t.add(unsafe.Offsetof(Stats{}.EventsRejected), 1)
	if f, ok := rejectField(err); ok {
		t.add(f, 1)
	}
	if _, r, ok := kindFields(k); ok {
		t.add(r, 1)
	}
}

// kindFields returns the fields counting kind k's applied and rejected
// events; ok is false for an unknown kind.
func kindFields(k EventKind) (applied, rejected uintptr, ok bool) {
	var s Stats
	switch k {
	case KindStored:
		return unsafe.Offsetof(s.StoredApplied), unsafe.Offsetof(s.StoredRejected), true
	case KindRemoved:
		return unsafe.Offsetof(s.RemovedApplied), unsafe.Offsetof(s.RemovedRejected), true
	case KindCleared:
		return unsafe.Offsetof(s.Clears), unsafe.Offsetof(s.ClearedRejected), true
	}
	return 0, 0, false
}

// rejectErrors lists each rejection error with the field counting it.
var rejectErrors = [...]struct {
	err   error
	field uintptr
}{
	{ErrUnknownParent, unsafe.Offsetof(Stats{}.RejectedUnknownParent)},
	{ErrHashConflict, unsafe.Offsetof(Stats{}.RejectedHashConflict)},
	{ErrEmptyEvent, unsafe.Offsetof(Stats{}.RejectedEmpty)},
	{ErrBatchTooLarge, unsafe.Offsetof(Stats{}.RejectedTooLarge)},
	{ErrTooDeep, unsafe.Offsetof(Stats{}.RejectedTooDeep)},
	{ErrTooManyWorkers, unsafe.Offsetof(Stats{}.RejectedTooManyWorkers)},
	{ErrBadKind, unsafe.Offsetof(Stats{}.RejectedBadKind)},
	{ErrClosed, unsafe.Offsetof(Stats{}.RejectedClosed)},
	{ErrQueueFull, unsafe.Offsetof(Stats{}.RejectedQueueFull)},
}

// rejectField returns the field that counts rejections with err.
func rejectField(err error) (uintptr, bool) {
	for _, r := range rejectErrors {
		if errors.Is(err, r.err) {
			return r.field, true
		}
	}
	return 0, false
}
