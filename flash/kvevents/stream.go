package kvevents

import (
	"errors"
	"log/slog"
	"slices"
	"sync/atomic"

	"github.com/flashindexer/flashindexer/flash"
)

// ResyncReason says why a stream's workers were cleared.
type ResyncReason uint8

const (
	// ResyncRestart: the sequence number went back, so the engine restarted
	// and its cache is empty; its workers are cleared.
	ResyncRestart ResyncReason = iota + 1
	// ResyncGap: batches were lost and could not be replayed (no replay
	// socket, or it no longer held them). What they did is unknown, so the
	// workers are cleared rather than kept with blocks they may have
	// dropped; they fill again from the next events.
	ResyncGap
	// ResyncLateJoin: the first batch seen did not start the stream and the
	// replay could not fill in from 0. Blocks stored before it are unknown
	// until stored again.
	ResyncLateJoin
)

func (r ResyncReason) String() string {
	switch r {
	case ResyncRestart:
		return "restart"
	case ResyncGap:
		return "gap"
	case ResyncLateJoin:
		return "late_join"
	}
	return "unknown"
}

// Resync describes one loss of a stream's state, for WithResyncHandler.
type Resync struct {
	Endpoint string
	Reason   ResyncReason
	// From and To bound the sequence numbers lost: [From, To).
	From, To uint64
	// Cleared lists the workers (DP ranks) of the endpoint that were cleared.
	Cleared []flash.Worker
}

// maxRanks bounds the DP ranks remembered per endpoint (for clearing).
const maxRanks = 1 << 16

// replayFunc asks an endpoint's replay socket for every batch from seq from
// on and calls each in order until it returns false or the replay ends.
type replayFunc func(from uint64, each func(seq uint64, payload []byte) bool) error

// stream follows one endpoint's sequence of batches and applies them. Only
// the endpoint's goroutine uses it.
type stream struct {
	ep       Endpoint
	worker   uint64
	ix       flash.Index
	c        *counters
	log      *slog.Logger
	onResync func(Resync)
	forward  func(*Forwarded) // nil: apply to ix
	fwd      Forwarded        // the batch being forwarded
	replay   replayFunc       // nil: the endpoint offers no replay

	tr       *Translator
	batch    Batch
	started  bool
	next     uint64   // the sequence number expected next
	lastSub  uint64   // the last sequence number received live
	haveLive bool     // a batch was received live
	ranks    []uint32 // DP ranks seen, sorted

	// For EndpointStates, read by other goroutines.
	connected atomic.Bool
	seen      atomic.Uint64 // next, once a batch was received
	live      atomic.Bool   // a batch was received
}

// receive handles a live batch.
func (s *stream) receive(seq uint64, payload []byte) {
	switch {
	case !s.started:
		s.started = true
		if seq != 0 {
			s.c.lateJoins.Add(1)
			s.recover(seq, ResyncLateJoin)
		}
	case s.haveLive && seq <= s.lastSub:
		s.c.restarts.Add(1)
		s.log.Warn("kvevents: engine restarted", "endpoint", s.ep.Addr, "seq", seq, "last", s.lastSub)
		s.resync(ResyncRestart, s.next, s.next)
		s.next = 0
		if seq != 0 {
			s.c.gaps.Add(1)
			s.recover(seq, ResyncGap)
		}
	case seq > s.next:
		s.c.gaps.Add(1)
		s.recover(seq, ResyncGap)
	}
	s.lastSub, s.haveLive = seq, true
	if seq < s.next {
		s.c.duplicates.Add(1) // applied already, from the replay socket
	} else {
		s.apply(seq, payload)
	}
	s.publish()
}

// publish makes the sequence visible to Endpoints.
func (s *stream) publish() {
	s.seen.Store(s.next)
	s.live.Store(true)
}

// catchUp runs once the first connection is up, before any batch: it
// applies what the replay socket holds, so that a subscriber started next
// to an idle engine learns its cache at once. History that does not reach
// back to 0 is applied from where it starts and reported (ResyncLateJoin):
// blocks stored before it stay unknown, and events that refer to them are
// rejected or skipped, so the index holds a subset of the cache, never more.
func (s *stream) catchUp() {
	if s.started || s.replay == nil {
		return
	}
	if err := s.fill(0, ResyncLateJoin); err != nil {
		s.log.Debug("kvevents: no history from the replay socket", "endpoint", s.ep.Addr, "err", err)
		return // the first live batch tells where the stream is
	}
	s.started = true
	if s.next > 0 {
		s.publish()
	}
}

// recover fills in the batches from s.next up to (not including) upto from
// the replay socket. What it cannot get is lost: the stream's workers are
// cleared and the loss reported (see ResyncReason).
func (s *stream) recover(upto uint64, reason ResyncReason) {
	from := s.next
	if s.replay != nil {
		err := s.fill(upto, reason)
		if s.next >= upto && err == nil {
			return
		}
		s.log.Warn("kvevents: replay incomplete", "endpoint", s.ep.Addr, "from", from, "reached", s.next, "want", upto, "err", err)
	}
	if s.next < upto {
		s.resync(reason, s.next, upto)
		s.next = upto
	}
}

// errReplayShort: the replay did not reach the sequence number it was for.
var errReplayShort = errors.New("kvevents: replay ended short")

// fill applies the replay socket's batches from s.next on, in order. When
// the replay starts past s.next (it no longer holds the first ones), those
// are lost: the workers are cleared and the loss reported, and the replayed
// batches apply from where they start (what they store is held; what they
// refer to from before is rejected). A hole after the start ends it. It
// returns nil when it got every batch up to at least upto without a loss.
func (s *stream) fill(upto uint64, reason ResyncReason) error {
	lost, applied := false, 0
	err := s.replay(s.next, func(seq uint64, payload []byte) bool {
		switch {
		case seq < s.next:
			return true
		case seq > s.next:
			if applied > 0 || lost {
				return false // a hole inside the replay
			}
			lost = true
			s.resync(reason, s.next, seq)
			s.next = seq
		}
		s.apply(seq, payload)
		s.c.replayed.Add(1)
		applied++
		return true
	})
	switch {
	case err != nil:
	case lost:
		err = errReplayShort
	case s.next < upto:
		err = errReplayShort
	}
	if err != nil {
		s.c.replayFail.Add(1)
		return err
	}
	s.c.replays.Add(1)
	return nil
}

// resync clears every DP rank of the stream seen so far and reports it.
func (s *stream) resync(reason ResyncReason, from, to uint64) {
	if reason != ResyncRestart {
		s.c.resyncs.Add(1)
		s.log.Warn("kvevents: batches lost, workers cleared", "endpoint", s.ep.Addr, "reason", reason.String(), "from", from, "to", to)
	}
	var cleared []flash.Worker
	s.startForward(from, true)
	for _, r := range s.ranks {
		w := flash.Worker{ID: s.worker, DPRank: r}
		if err := s.emit(flash.ClearedEvent(w)); err != nil {
			s.c.applyErrors.Add(1)
			continue
		}
		s.c.events.Add(1)
		cleared = append(cleared, w)
	}
	s.endForward()
	if s.onResync != nil {
		s.onResync(Resync{Endpoint: s.ep.Addr, Reason: reason, From: from, To: to, Cleared: cleared})
	}
}

// apply decodes one batch and hands its events to the index.
func (s *stream) apply(seq uint64, payload []byte) {
	s.next = seq + 1
	defer s.tr.Trim()
	defer s.batch.Trim() // after a failed decode too: it may have grown
	if err := Decode(payload, &s.batch); err != nil {
		s.c.malformed.Add(1)
		s.log.Warn("kvevents: batch dropped", "endpoint", s.ep.Addr, "seq", seq, "err", err)
		return
	}
	rank := s.ep.DPRank
	if s.batch.HasDPRank {
		rank = s.batch.DPRank
	}
	// A hostile or broken publisher could name any number of ranks; the
	// index bounds its workers, and this list is bounded too.
	if i, found := slices.BinarySearch(s.ranks, rank); !found && len(s.ranks) < maxRanks {
		s.ranks = slices.Insert(s.ranks, i, rank)
	}
	w := flash.Worker{ID: s.worker, DPRank: rank}
	s.c.unknown.Add(uint64(s.batch.Unknown))
	s.startForward(seq, false)
	defer s.endForward()
	for i := range s.batch.Events {
		e := &s.batch.Events[i]
		ev, ok, err := s.tr.Event(w, e)
		if errors.Is(err, ErrUnknownMedium) {
			s.c.medium.Add(1)
			continue
		}
		if err != nil {
			s.c.badEvents.Add(1)
			continue
		}
		if !ok {
			continue
		}
		if err := s.emit(ev); err != nil {
			s.c.applyErrors.Add(1)
			continue
		}
		s.c.events.Add(1)
	}
	s.c.batches.Add(1)
}

// emit applies ev to the index, or adds a copy of it to the batch being
// forwarded.
func (s *stream) emit(ev flash.Event) error {
	if s.forward == nil {
		return s.ix.Apply(ev)
	}
	ev.Blocks, ev.Hashes = slices.Clone(ev.Blocks), slices.Clone(ev.Hashes)
	s.fwd.Events = append(s.fwd.Events, ev)
	return nil
}

// startForward begins a forwarded batch; endForward hands it over, if it
// has events.
func (s *stream) startForward(seq uint64, resync bool) {
	if s.forward != nil {
		s.fwd = Forwarded{Endpoint: s.ep.Addr, Seq: seq, Resync: resync, Events: s.fwd.Events[:0]}
		if !resync {
			s.fwd.TS = s.batch.TS
		}
	}
}

func (s *stream) endForward() {
	if s.forward != nil && len(s.fwd.Events) > 0 {
		s.forward(&s.fwd)
		clear(s.fwd.Events)
		s.fwd.Events = s.fwd.Events[:0]
	}
}
