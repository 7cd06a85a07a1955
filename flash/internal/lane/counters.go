package lane

import (
	"errors"
	"sync/atomic"

	"github.com/flashindexer/flashindexer/flash/internal/worker"
)

// Counter names one counter: its index is its field's position in
// flash.Stats (TestStats_Counters there).
type Counter int

// The counters, in flash.Stats' field order.
const (
	EventsApplied Counter = iota
	EventsRejected
	BlocksStored
	BlocksDuplicate
	BlocksRemoved
	RemovesUnknown
	Clears
	WorkersRemoved
	RejectedUnknownParent
	RejectedHashConflict
	RejectedEmpty
	RejectedTooLarge
	RejectedTooDeep
	RejectedTooManyWorkers
	RejectedBadKind
	RejectedClosed
	RejectedQueueFull
	Queries
	QueryBlocks
	EventGaps
	EventRestarts
	StoredApplied
	RemovedApplied
	StoredRejected
	RemovedRejected
	ClearedRejected
	Predictions
	PredictionsRejected
	QueryHits
	QueryMatchedBlocks
	RejectedBadTier
	NumCounters
)

// Counts is every counter's value, in flash.Stats' layout.
type Counts [NumCounters]uint64

// Tally is the counters counted from many goroutines.
type Tally [NumCounters]atomic.Uint64

func (t *Tally) add(c Counter, n uint64) { t[c].Add(n) }

// AddTo adds every counter of t into c.
func (t *Tally) AddTo(c *Counts) {
	for i := range t {
		c[i] += t[i].Load()
	}
}

// applied counts an applied event of kind k (EventsApplied is their sum,
// made by Set.Counts).
func (t *Tally) applied(k Kind) {
	if a, _, ok := kindCounters(k); ok {
		t.add(a, 1)
	}
}

// reject counts an event of kind k rejected with err: in EventsRejected,
// under err's counter if it is one of the index's errors, and under its
// kind.
func (t *Tally) reject(k Kind, err error) {
	t.add(EventsRejected, 1)
	for _, r := range rejectErrors {
		if errors.Is(err, r.err) {
			t.add(r.c, 1)
			break
		}
	}
	if _, r, ok := kindCounters(k); ok {
		t.add(r, 1)
	}
}

// kindCounters returns the counters of kind k's applied and rejected
// events; ok is false for an unknown kind.
func kindCounters(k Kind) (applied, rejected Counter, ok bool) {
	switch k {
	case Stored:
		return StoredApplied, StoredRejected, true
	case Removed:
		return RemovedApplied, RemovedRejected, true
	case Cleared:
		return Clears, ClearedRejected, true
	}
	return 0, 0, false
}

// rejectErrors lists each rejection error with its counter.
var rejectErrors = [...]struct {
	err error
	c   Counter
}{
	{worker.ErrUnknownParent, RejectedUnknownParent},
	{worker.ErrHashConflict, RejectedHashConflict},
	{ErrEmptyEvent, RejectedEmpty},
	{ErrBatchTooLarge, RejectedTooLarge},
	{worker.ErrTooDeep, RejectedTooDeep},
	{ErrTooManyWorkers, RejectedTooManyWorkers},
	{ErrBadKind, RejectedBadKind},
	{ErrClosed, RejectedClosed},
	{ErrQueueFull, RejectedQueueFull},
	{ErrBadTier, RejectedBadTier},
}
