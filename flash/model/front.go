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

// TierSink is a Sink that, in an index of several tiers, also hears the
// fastest tier each content a worker holds is in: after Add, and whenever it
// changes while the worker holds the content. A content not named is in
// tier 0 (the fastest) or not held.
type TierSink interface {
	Sink
	Fastest(w flash.Worker, p Place, t flash.Tier)
}

// fastest returns the fastest tier n counts an engine id in, -1 if none.
func fastest(n *[flash.MaxTiers]int) int {
	for t, c := range n {
		if c > 0 {
			return t
		}
	}
	return -1
}

// refastest tells s the fastest tier of w's content p when it is no longer
// was (the fastest before a change of n).
func refastest(s Sink, w flash.Worker, p Place, n *[flash.MaxTiers]int, was int) {
	if ts, ok := s.(TierSink); ok {
		if f := fastest(n); f >= 0 && f != was {
			ts.Fastest(w, p, flash.Tier(f))
		}
	}
}

type noSink struct{}

func (noSink) Add(flash.Worker, Place) {}
func (noSink) Del(flash.Worker, Place) {}

type chain struct {
	blocks  map[flash.ExternalHash]Place
	content map[contentKey]int // engine ids per content
	// With several tiers (nil with one, where every id is in the one):
	// the tiers holding each engine id, a bit each, and each content's
	// engine ids per tier.
	tiers  map[flash.ExternalHash]uint8
	inTier map[contentKey]*[flash.MaxTiers]int
}

// idTiers returns the tiers holding engine id h (0: none).
func (ch *chain) idTiers(h flash.ExternalHash) uint8 {
	if ch.tiers != nil {
		return ch.tiers[h]
	}
	if _, ok := ch.blocks[h]; ok {
		return 1
	}
	return 0
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
	err := checkEvent(ev, c.cfg.MaxBatch, c.cfg.NumTiers())
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
			if !ok || ch.tiers != nil && ch.tiers[h]&(1<<ev.Tier) == 0 {
				// Not held, or not in this tier.
				c.counters.Add(CounterRemovesUnknown, 1)
				continue
			}
			ch.untier(ev.Worker, h, p, ev.Tier, s)
			c.counters.Add(CounterBlocksRemoved, 1)
		}
	case flash.KindCleared:
		if ch == nil {
			break
		}
		if ClearsAll(ev, &c.cfg) {
			c.clear(ev.Worker, ch, s)
			break
		}
		for h, m := range ch.tiers {
			if m&(1<<ev.Tier) != 0 {
				ch.untier(ev.Worker, h, ch.blocks[h], ev.Tier, s)
			}
		}
	}
	return nil
}

// ClearsAll reports whether the Cleared event ev empties every tier of an
// index configured with cfg: it names none, or the index has one.
func ClearsAll(ev *flash.Event, cfg *flash.Config) bool { return !ev.TierOnly || cfg.NumTiers() == 1 }

// untier takes tier t from engine id h of place p, which holds it; the id
// leaves when it was its last tier, and the content when that was its last
// id.
func (ch *chain) untier(w flash.Worker, h flash.ExternalHash, p Place, t flash.Tier, s Sink) {
	k := contentKey{p.Pos, p.Seq}
	if ch.tiers != nil {
		n := ch.inTier[k]
		was := fastest(n)
		n[t]--
		defer refastest(s, w, p, n, was)
		if ch.tiers[h] &^= 1 << t; ch.tiers[h] != 0 {
			return
		}
		delete(ch.tiers, h)
	}
	delete(ch.blocks, h)
	if ch.content[k]--; ch.content[k] == 0 {
		delete(ch.content, k)
		delete(ch.inTier, k)
		s.Del(w, p)
	}
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
	clear(ch.tiers)
	clear(ch.inTier)
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
	bit := uint8(1) << ev.Tier
	for i, b := range ev.Blocks {
		p := places[i]
		k := contentKey{p.Pos, p.Seq}
		m := ch.idTiers(b.Hash)
		if m&bit != 0 {
			c.counters.Add(CounterBlocksDuplicate, 1)
			continue
		}
		if m == 0 {
			// A new engine id.
			ch.blocks[b.Hash] = p
			if ch.content[k]++; ch.content[k] == 1 {
				s.Add(ev.Worker, p)
			}
		}
		if ch.tiers != nil {
			ch.tiers[b.Hash] = m | bit
			n := ch.inTier[k]
			if n == nil {
				n = new([flash.MaxTiers]int)
				ch.inTier[k] = n
			}
			was := fastest(n)
			n[ev.Tier]++
			refastest(s, ev.Worker, p, n, was)
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
	ch := &chain{blocks: map[flash.ExternalHash]Place{}, content: map[contentKey]int{}}
	if c.cfg.NumTiers() > 1 {
		ch.tiers, ch.inTier = map[flash.ExternalHash]uint8{}, map[contentKey]*[flash.MaxTiers]int{}
	}
	c.workers[w] = ch
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

// Holds reports whether w holds the content (pos, seq), in any tier.
func (c *Front) Holds(w flash.Worker, pos int, seq flash.SeqHash) bool {
	ch := c.workers[w]
	return ch != nil && ch.content[contentKey{pos, seq}] > 0
}

// HoldsWithin reports whether w holds the content (pos, seq) in tier t or
// a faster one.
func (c *Front) HoldsWithin(w flash.Worker, pos int, seq flash.SeqHash, t flash.Tier) bool {
	ch := c.workers[w]
	if ch == nil {
		return false
	}
	if ch.inTier == nil {
		return ch.content[contentKey{pos, seq}] > 0
	}
	if n := ch.inTier[contentKey{pos, seq}]; n != nil {
		for f := 0; f <= int(t) && f < flash.MaxTiers; f++ {
			if n[f] > 0 {
				return true
			}
		}
	}
	return false
}

// Tiers returns the tiers holding engine id h of w, a bit each (0: w does
// not hold h).
func (c *Front) Tiers(w flash.Worker, h flash.ExternalHash) uint8 {
	if ch := c.workers[w]; ch != nil {
		return ch.idTiers(h)
	}
	return 0
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
// whatever the index holds (package flash, Event): an unknown kind, a tier
// past the index's tiers, a Stored or Removed event with no blocks or more
// than maxBatch.
func checkEvent(ev *flash.Event, maxBatch, tiers int) error {
	n := len(ev.Hashes)
	switch ev.Kind {
	case flash.KindStored:
		n = len(ev.Blocks)
	case flash.KindRemoved:
	case flash.KindCleared:
		if ev.TierOnly && int(ev.Tier) >= tiers {
			return flash.ErrBadTier
		}
		return nil
	default:
		return flash.ErrBadKind
	}
	switch {
	case int(ev.Tier) >= tiers:
		return flash.ErrBadTier
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
