package kvevents

import "sync/atomic"

// Stats are a Subscriber's counters, summed over its endpoints. They only grow.
type Stats struct {
	Connects        uint64 // connections made (the first and every reconnect)
	Disconnects     uint64 // connections lost
	DialFailures    uint64 // connection attempts that failed
	Batches         uint64 // batches decoded and applied (replayed ones included)
	Events          uint64 // events handed to the index
	Malformed       uint64 // batches dropped: a frame or payload did not parse (ErrMalformed)
	BadEvents       uint64 // events dropped: ErrTokenCount or ErrBlockSize
	UnknownEvents   uint64 // events skipped: a tag this package does not know
	UnknownMedium   uint64 // events refused: a medium the tier map does not name (ErrUnknownMedium)
	ApplyErrors     uint64 // events the index's Apply refused: at admission, or any rejection of a synchronous index (its Stats say why)
	Gaps            uint64 // sequence numbers that skipped ahead (batches lost)
	Restarts        uint64 // sequence numbers that went back (the engine restarted)
	LateJoins       uint64 // first batches of a stream that did not start at 0
	Replays         uint64 // replay requests that recovered every missing batch
	ReplayedBatches uint64 // batches applied from the replay socket
	ReplayFailures  uint64 // replay requests that timed out, failed or came back short
	Resyncs         uint64 // streams whose lost batches could not be recovered (see ResyncReason)
	Duplicates      uint64 // batches received again (already applied through a replay)
}

type counters struct {
	connects, disconnects, dialFailures    atomic.Uint64
	batches, events                        atomic.Uint64
	malformed, badEvents, unknown, medium  atomic.Uint64
	applyErrors                            atomic.Uint64
	gaps, restarts, lateJoins              atomic.Uint64
	replays, replayed, replayFail, resyncs atomic.Uint64
	duplicates                             atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Connects: c.connects.Load(), Disconnects: c.disconnects.Load(), DialFailures: c.dialFailures.Load(),
		Batches: c.batches.Load(), Events: c.events.Load(),
		Malformed: c.malformed.Load(), BadEvents: c.badEvents.Load(),
		UnknownEvents: c.unknown.Load(), UnknownMedium: c.medium.Load(),
		ApplyErrors: c.applyErrors.Load(),
		Gaps:        c.gaps.Load(), Restarts: c.restarts.Load(), LateJoins: c.lateJoins.Load(),
		Replays: c.replays.Load(), ReplayedBatches: c.replayed.Load(), ReplayFailures: c.replayFail.Load(),
		Resyncs: c.resyncs.Load(), Duplicates: c.duplicates.Load(),
	}
}
