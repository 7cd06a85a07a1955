package model

import (
	"sync/atomic"
	"time"

	"github.com/flashindexer/flashindexer/flash"
)

// Place is one content a worker holds: its position, its sequence hash, its
// local hash, and the sequence hash of its parent (0 at position 0).
type Place struct {
	Pos    int
	Seq    flash.SeqHash
	Local  flash.LocalHash
	Parent flash.SeqHash
}

type contentKey struct {
	pos int
	seq flash.SeqHash
}

// Sink hears which contents a worker starts and stops holding.
type Sink interface {
	Add(w flash.Worker, p Place) // w starts holding p
	Del(w flash.Worker, p Place) // w stops holding p (the last engine id naming it left)
}

type noSink struct{}

func (noSink) Add(flash.Worker, Place) {}
func (noSink) Del(flash.Worker, Place) {}

type chain struct {
	blocks  map[flash.ExternalHash]Place
	content map[contentKey]int // engine ids per content
}

// Front resolves events by the semantics, exactly as every backend must:
// the parent found by engine id among the worker's blocks, sequence hashes
// computed from the parent's, the whole event validated before anything
// changes, every rejection and skipped input counted. It tells a Sink which
// contents each worker starts and stops holding, so that an index built on
// it (the model, the baselines) only keeps its own structure. A Front is not
// safe for concurrent use: its owner serializes it.
type Front struct {
	cfg      flash.Config
	workers  map[flash.Worker]*chain
	counters *Counters
	slots    *atomic.Int64 // workers known, shared by the fronts of one index
}

// NewFront returns a front counting into counters. Fronts that split one
// index's workers between them (one per writer) share slots, so MaxWorkers
// bounds them together; nil gives the front its own.
func NewFront(cfg flash.Config, counters *Counters, slots *atomic.Int64) *Front {
	if slots == nil {
		slots = new(atomic.Int64)
	}
	return &Front{cfg: cfg.Normalize(), workers: map[flash.Worker]*chain{}, counters: counters, slots: slots}
}

// Apply applies ev, telling s (nil: nobody) about content changes, and
// returns its rejection, counted.
func (c *Front) Apply(ev *flash.Event, s Sink) error {
	if s == nil {
		s = noSink{}
	}
	err := checkEvent(ev, c.cfg.MaxBatch)
	if err == nil {
		err = c.applyValid(ev, s)
	}
	if err != nil {
		c.counters.RejectEvent(ev.Kind, err)
		return err
	}
	c.counters.Applied(ev.Kind)
	return nil
}

func (c *Front) applyValid(ev *flash.Event, s Sink) error {
	ch := c.workers[ev.Worker]
	switch ev.Kind {
	case flash.KindStored:
		return c.store(ev, ch, s)
	case flash.KindRemoved:
		for _, h := range ev.Hashes {
			p, ok := Place{}, false
			if ch != nil {
				p, ok = ch.blocks[h]
			}
			if !ok {
				c.counters.Add(CounterRemovesUnknown, 1)
				continue
			}
			delete(ch.blocks, h)
			k := contentKey{p.Pos, p.Seq}
			if ch.content[k]--; ch.content[k] == 0 {
				delete(ch.content, k)
				s.Del(ev.Worker, p)
			}
			c.counters.Add(CounterBlocksRemoved, 1)
		}
	case flash.KindCleared:
		if ch != nil {
			c.clear(ev.Worker, ch, s)
		}
	}
	return nil
}

func (c *Front) clear(w flash.Worker, ch *chain, s Sink) {
	done := map[contentKey]bool{}
	for _, p := range ch.blocks {
		if k := (contentKey{p.Pos, p.Seq}); !done[k] {
			done[k] = true
			s.Del(w, p)
		}
	}
	clear(ch.blocks)
	clear(ch.content)
}

func (c *Front) store(ev *flash.Event, ch *chain, s Sink) error {
	pos, prev := 0, flash.SeqHash(0)
	if ev.HasParent {
		if ch == nil {
			return flash.ErrUnknownParent
		}
		p, ok := ch.blocks[ev.Parent]
		if !ok {
			return flash.ErrUnknownParent
		}
		pos, prev = p.Pos+1, p.Seq
	}
	if pos+len(ev.Blocks) > c.cfg.MaxDepth {
		return flash.ErrTooDeep
	}
	places := make([]Place, len(ev.Blocks))
	seen := make(map[flash.ExternalHash]bool, len(ev.Blocks))
	for i, b := range ev.Blocks {
		seq := flash.SeqHash(b.Local)
		if pos+i > 0 {
			seq = flash.Chain(prev, b.Local)
		}
		places[i] = Place{Pos: pos + i, Seq: seq, Local: b.Local, Parent: prev}
		prev = seq
		if seen[b.Hash] {
			return flash.ErrHashConflict
		}
		seen[b.Hash] = true
		if ch != nil {
			if held, ok := ch.blocks[b.Hash]; ok && (held.Pos != pos+i || held.Seq != seq) {
				return flash.ErrHashConflict
			}
		}
	}
	if ch == nil {
		if err := c.Touch(ev.Worker); err != nil {
			return err
		}
		ch = c.workers[ev.Worker]
	}
	for i, b := range ev.Blocks {
		if _, ok := ch.blocks[b.Hash]; ok {
			c.counters.Add(CounterBlocksDuplicate, 1)
			continue
		}
		p := places[i]
		ch.blocks[b.Hash] = p
		k := contentKey{p.Pos, p.Seq}
		if ch.content[k]++; ch.content[k] == 1 {
			s.Add(ev.Worker, p)
		}
		c.counters.Add(CounterBlocksStored, 1)
	}
	return nil
}

// Touch gives w a slot, holding nothing, if it has none: a new worker's
// first valid Stored event, or its first prediction. ErrTooManyWorkers when
// every slot is taken.
func (c *Front) Touch(w flash.Worker) error {
	if c.workers[w] != nil {
		return nil
	}
	if c.slots.Add(1) > int64(c.cfg.MaxWorkers) {
		c.slots.Add(-1)
		return flash.ErrTooManyWorkers
	}
	c.workers[w] = &chain{blocks: map[flash.ExternalHash]Place{}, content: map[contentKey]int{}}
	return nil
}

// RemoveWorker drops every rank of id and reports whether there was one.
func (c *Front) RemoveWorker(id uint64, s Sink) bool {
	if s == nil {
		s = noSink{}
	}
	removed := false
	for w, ch := range c.workers {
		if w.ID == id {
			c.clear(w, ch, s)
			delete(c.workers, w)
			c.slots.Add(-1)
			removed = true
		}
	}
	if removed {
		c.counters.Add(CounterWorkersRemoved, 1)
	}
	return removed
}

// BlockCount returns the number of engine ids w holds.
func (c *Front) BlockCount(w flash.Worker) int {
	if ch := c.workers[w]; ch != nil {
		return len(ch.blocks)
	}
	return 0
}

// Holds reports whether w holds the content (pos, seq).
func (c *Front) Holds(w flash.Worker, pos int, seq flash.SeqHash) bool {
	ch := c.workers[w]
	return ch != nil && ch.content[contentKey{pos, seq}] > 0
}

// Workers calls f for every worker that holds a slot.
func (c *Front) Workers(f func(w flash.Worker)) {
	for w := range c.workers {
		f(w)
	}
}

// Known reports whether w holds a slot.
func (c *Front) Known(w flash.Worker) bool { return c.workers[w] != nil }

// SeqsOf returns q's sequence hashes, computed (into a new slice) when q
// carries none.
func SeqsOf(q flash.Query) []flash.SeqHash {
	if q.HasSeqs() {
		return q.Seqs
	}
	return flash.ChainLocals(nil, q.Locals)
}

// checkEvent returns the error of an event that is malformed on its own,
// whatever the index holds (package flash, Event): an unknown kind, a
// Stored or Removed event with no blocks or more than maxBatch.
func checkEvent(ev *flash.Event, maxBatch int) error {
	n := len(ev.Hashes)
	switch ev.Kind {
	case flash.KindStored:
		n = len(ev.Blocks)
	case flash.KindRemoved:
	case flash.KindCleared:
		return nil
	default:
		return flash.ErrBadKind
	}
	switch {
	case n == 0:
		return flash.ErrEmptyEvent
	case n > maxBatch:
		return flash.ErrBatchTooLarge
	}
	return nil
}

// checkPrediction returns the error of a prediction that is malformed on
// its own (package flash, Predictor): no blocks, more than MaxBatch or
// MaxDepth, a ttl ≤ 0.
func checkPrediction(cfg *flash.Config, q *flash.Query, ttl time.Duration) error {
	switch n := len(q.Locals); {
	case n == 0:
		return flash.ErrEmptyEvent
	case n > cfg.MaxBatch:
		return flash.ErrBatchTooLarge
	case n > cfg.MaxDepth:
		return flash.ErrTooDeep
	case ttl <= 0:
		return flash.ErrBadTTL
	}
	return nil
}
