package model

import (
	"errors"
	"sync/atomic"

	"github.com/flashindexer/flashindexer/flash"
)

// Counter names one statistic of flash.Stats, for Counters. Counters only
// grow.
type Counter uint8

const (
	CounterEventsApplied          Counter = iota // events accepted and applied (the sum of the three by kind)
	CounterEventsRejected                        // events rejected whole (sum of the Rejected* counters)
	CounterBlocksStored                          // blocks newly held by a worker
	CounterBlocksDuplicate                       // stored blocks the worker already held (idempotent)
	CounterBlocksRemoved                         // blocks that left a worker through Removed
	CounterRemovesUnknown                        // removed hashes the worker did not hold (skipped)
	CounterClears                                // Cleared events applied (counted by Applied)
	CounterWorkersRemoved                        // RemoveWorker calls that removed at least one rank
	CounterRejectedUnknownParent                 // ErrUnknownParent
	CounterRejectedHashConflict                  // ErrHashConflict
	CounterRejectedEmpty                         // ErrEmptyEvent
	CounterRejectedTooLarge                      // ErrBatchTooLarge
	CounterRejectedTooDeep                       // ErrTooDeep
	CounterRejectedTooManyWorkers                // ErrTooManyWorkers
	CounterRejectedBadKind                       // ErrBadKind
	CounterRejectedClosed                        // ErrClosed
	CounterRejectedQueueFull                     // ErrQueueFull (TryApply)
	CounterQueries                               // FindMatches calls
	CounterQueryBlocks                           // query blocks looked at by FindMatches calls
	CounterEventGaps                             // event ids that skipped ahead (events lost upstream)
	CounterEventRestarts                         // event ids that went back (the engine restarted)
	CounterStoredApplied                         // Stored events applied
	CounterRemovedApplied                        // Removed events applied
	CounterStoredRejected                        // Stored events rejected
	CounterRemovedRejected                       // Removed events rejected
	CounterClearedRejected                       // Cleared events rejected
	CounterPredictions                           // Predict calls applied
	CounterPredictionsRejected                   // Predict calls rejected
	CounterQueryHits                             // FindMatches calls some worker matched
	CounterQueryMatchedBlocks                    // the deepest match's blocks, summed over them
	CounterRejectedBadTier                       // ErrBadTier
	numCounters
)

// Counters is a set of atomic counters that any backend of flash.Index can
// embed to answer Stats: the model's, and the baselines' (bench/baseline).
// The zero value is ready. Safe for concurrent use; Add allocates nothing.
// The Flash index counts on its own, so the suite's comparisons of Stats
// check two implementations against each other.
type Counters struct {
	v [numCounters]atomic.Uint64
}

// CountHit counts a query's answer: a hit when some worker matched, with
// the deepest match's blocks.
func (c *Counters) CountHit(dst *flash.Scores) {
	deepest := 0
	for _, m := range dst.Matches {
		deepest = max(deepest, m.Depth)
	}
	if deepest > 0 {
		c.Add(CounterQueryHits, 1)
		c.Add(CounterQueryMatchedBlocks, uint64(deepest))
	}
}

// Add adds n to counter c.
func (c *Counters) Add(k Counter, n uint64) {
	if k < numCounters {
		c.v[k].Add(n)
	}
}

// Get returns counter k.
func (c *Counters) Get(k Counter) uint64 {
	if k == CounterEventsApplied {
		return c.applied()
	}
	if k < numCounters {
		return c.v[k].Load()
	}
	return 0
}

// Reject counts a rejected event under the counter matching err. Errors that
// are not this package's rejections are counted as rejected only.
func (c *Counters) Reject(err error) {
	c.v[CounterEventsRejected].Add(1)
	if k, ok := RejectCounter(err); ok {
		c.v[k].Add(1)
	}
}

// RejectEvent counts a rejected event of kind k: as Reject does, and under
// its kind.
func (c *Counters) RejectEvent(k flash.EventKind, err error) {
	c.Reject(err)
	if _, rejected, ok := kindCounters(k); ok {
		c.v[rejected].Add(1)
	}
}

// Applied counts an applied event of kind k; EventsApplied is their sum.
func (c *Counters) Applied(k flash.EventKind) {
	if applied, _, ok := kindCounters(k); ok {
		c.v[applied].Add(1)
	}
}

// kindCounters returns the counters of kind k's applied and rejected
// events; ok is false for an unknown kind.
func kindCounters(k flash.EventKind) (applied, rejected Counter, ok bool) {
	switch k {
	case flash.KindStored:
		return CounterStoredApplied, CounterStoredRejected, true
	case flash.KindRemoved:
		return CounterRemovedApplied, CounterRemovedRejected, true
	case flash.KindCleared:
		return CounterClears, CounterClearedRejected, true
	}
	return 0, 0, false
}

func (c *Counters) applied() uint64 {
	return c.v[CounterStoredApplied].Load() + c.v[CounterRemovedApplied].Load() + c.v[CounterClears].Load()
}

// RejectCounter returns the counter that counts rejections with err (one
// of flash's errors).
func RejectCounter(err error) (Counter, bool) {
	switch {
	case errors.Is(err, flash.ErrUnknownParent):
		return CounterRejectedUnknownParent, true
	case errors.Is(err, flash.ErrHashConflict):
		return CounterRejectedHashConflict, true
	case errors.Is(err, flash.ErrEmptyEvent):
		return CounterRejectedEmpty, true
	case errors.Is(err, flash.ErrBatchTooLarge):
		return CounterRejectedTooLarge, true
	case errors.Is(err, flash.ErrTooDeep):
		return CounterRejectedTooDeep, true
	case errors.Is(err, flash.ErrTooManyWorkers):
		return CounterRejectedTooManyWorkers, true
	case errors.Is(err, flash.ErrBadKind):
		return CounterRejectedBadKind, true
	case errors.Is(err, flash.ErrClosed):
		return CounterRejectedClosed, true
	case errors.Is(err, flash.ErrQueueFull):
		return CounterRejectedQueueFull, true
	case errors.Is(err, flash.ErrBadTier):
		return CounterRejectedBadTier, true
	}
	return 0, false
}

// AddTo adds every counter of c into s.
func (c *Counters) AddTo(s *flash.Stats) {
	g := func(k Counter) uint64 { return c.v[k].Load() }
	s.EventsApplied += c.applied()
	s.EventsRejected += g(CounterEventsRejected)
	s.BlocksStored += g(CounterBlocksStored)
	s.BlocksDuplicate += g(CounterBlocksDuplicate)
	s.BlocksRemoved += g(CounterBlocksRemoved)
	s.RemovesUnknown += g(CounterRemovesUnknown)
	s.Clears += g(CounterClears)
	s.WorkersRemoved += g(CounterWorkersRemoved)
	s.RejectedUnknownParent += g(CounterRejectedUnknownParent)
	s.RejectedHashConflict += g(CounterRejectedHashConflict)
	s.RejectedEmpty += g(CounterRejectedEmpty)
	s.RejectedTooLarge += g(CounterRejectedTooLarge)
	s.RejectedTooDeep += g(CounterRejectedTooDeep)
	s.RejectedTooManyWorkers += g(CounterRejectedTooManyWorkers)
	s.RejectedBadKind += g(CounterRejectedBadKind)
	s.RejectedClosed += g(CounterRejectedClosed)
	s.RejectedQueueFull += g(CounterRejectedQueueFull)
	s.Queries += g(CounterQueries)
	s.QueryBlocks += g(CounterQueryBlocks)
	s.EventGaps += g(CounterEventGaps)
	s.EventRestarts += g(CounterEventRestarts)
	s.StoredApplied += g(CounterStoredApplied)
	s.RemovedApplied += g(CounterRemovedApplied)
	s.StoredRejected += g(CounterStoredRejected)
	s.RemovedRejected += g(CounterRemovedRejected)
	s.ClearedRejected += g(CounterClearedRejected)
	s.Predictions += g(CounterPredictions)
	s.PredictionsRejected += g(CounterPredictionsRejected)
	s.QueryHits += g(CounterQueryHits)
	s.QueryMatchedBlocks += g(CounterQueryMatchedBlocks)
	s.RejectedBadTier += g(CounterRejectedBadTier)
}

// Snapshot returns the counters as Stats.
func (c *Counters) Snapshot() flash.Stats {
	var s flash.Stats
	c.AddTo(&s)
	return s
}
