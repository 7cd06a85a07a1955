package baseline

import (
	"sync/atomic"

	"github.com/flashindexer/flashindexer/flash"
)

// place is one content a worker holds: position, sequence hash, local hash,
// and the sequence hash of its parent (0 at position 0).
type place struct {
	pos    int
	seq    flash.SeqHash
	local  flash.LocalHash
	parent flash.SeqHash
}

type contentKey struct {
	pos int
	seq flash.SeqHash
}

// sink receives content changes from the front.
type sink interface {
	add(w flash.Worker, p place) // w starts holding p
	del(w flash.Worker, p place) // w stops holding p
}

type chain struct {
	blocks  map[flash.ExternalHash]place
	content map[contentKey]int // engine ids per content
}

// chains is the event front every baseline shares. Not safe for
// concurrent use: each backend serializes it its own way.
type chains struct {
	cfg      flash.Config
	workers  map[flash.Worker]*chain
	counters *flash.Counters
	slots    *atomic.Int64 // workers known, shared by the fronts of one index
}

func newChains(cfg flash.Config, counters *flash.Counters, slots *atomic.Int64) *chains {
	if slots == nil {
		slots = new(atomic.Int64)
	}
	return &chains{cfg: cfg.Normalize(), workers: map[flash.Worker]*chain{}, counters: counters, slots: slots}
}

// apply applies ev, telling s about content changes, and returns its
// rejection, counted.
func (c *chains) apply(ev *flash.Event, s sink) error {
	err := c.cfg.CheckEvent(ev)
	if err == nil {
		err = c.applyValid(ev, s)
	}
	if err != nil {
		c.counters.Reject(err)
		return err
	}
	c.counters.Add(flash.CounterEventsApplied, 1)
	return nil
}

func (c *chains) applyValid(ev *flash.Event, s sink) error {
	ch := c.workers[ev.Worker]
	switch ev.Kind {
	case flash.KindStored:
		return c.store(ev, ch, s)
	case flash.KindRemoved:
		for _, h := range ev.Hashes {
			p, ok := place{}, false
			if ch != nil {
				p, ok = ch.blocks[h]
			}
			if !ok {
				c.counters.Add(flash.CounterRemovesUnknown, 1)
				continue
			}
			delete(ch.blocks, h)
			k := contentKey{p.pos, p.seq}
			if ch.content[k]--; ch.content[k] == 0 {
				delete(ch.content, k)
				s.del(ev.Worker, p)
			}
			c.counters.Add(flash.CounterBlocksRemoved, 1)
		}
	case flash.KindCleared:
		if ch != nil {
			c.clear(ev.Worker, ch, s)
		}
		c.counters.Add(flash.CounterClears, 1)
	}
	return nil
}

func (c *chains) clear(w flash.Worker, ch *chain, s sink) {
	done := map[contentKey]bool{}
	for _, p := range ch.blocks {
		if k := (contentKey{p.pos, p.seq}); !done[k] {
			done[k] = true
			s.del(w, p)
		}
	}
	clear(ch.blocks)
	clear(ch.content)
}

func (c *chains) store(ev *flash.Event, ch *chain, s sink) error {
	pos, prev := 0, flash.SeqHash(0)
	if ev.HasParent {
		if ch == nil {
			return flash.ErrUnknownParent
		}
		p, ok := ch.blocks[ev.Parent]
		if !ok {
			return flash.ErrUnknownParent
		}
		pos, prev = p.pos+1, p.seq
	}
	if pos+len(ev.Blocks) > c.cfg.MaxDepth {
		return flash.ErrTooDeep
	}
	places := make([]place, len(ev.Blocks))
	seen := make(map[flash.ExternalHash]bool, len(ev.Blocks))
	for i, b := range ev.Blocks {
		seq := flash.SeqHash(b.Local)
		if pos+i > 0 {
			seq = flash.Chain(prev, b.Local)
		}
		places[i] = place{pos: pos + i, seq: seq, local: b.Local, parent: prev}
		prev = seq
		if seen[b.Hash] {
			return flash.ErrHashConflict
		}
		seen[b.Hash] = true
		if ch != nil {
			if held, ok := ch.blocks[b.Hash]; ok && (held.pos != pos+i || held.seq != seq) {
				return flash.ErrHashConflict
			}
		}
	}
	if ch == nil {
		if c.slots.Add(1) > int64(c.cfg.MaxWorkers) {
			c.slots.Add(-1)
			return flash.ErrTooManyWorkers
		}
		ch = &chain{blocks: map[flash.ExternalHash]place{}, content: map[contentKey]int{}}
		c.workers[ev.Worker] = ch
	}
	for i, b := range ev.Blocks {
		if _, ok := ch.blocks[b.Hash]; ok {
			c.counters.Add(flash.CounterBlocksDuplicate, 1)
			continue
		}
		p := places[i]
		ch.blocks[b.Hash] = p
		k := contentKey{p.pos, p.seq}
		if ch.content[k]++; ch.content[k] == 1 {
			s.add(ev.Worker, p)
		}
		c.counters.Add(flash.CounterBlocksStored, 1)
	}
	return nil
}

// removeWorker drops every rank of id and reports whether there was one.
func (c *chains) removeWorker(id uint64, s sink) bool {
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
		c.counters.Add(flash.CounterWorkersRemoved, 1)
	}
	return removed
}

func (c *chains) blockCount(w flash.Worker) int {
	if ch := c.workers[w]; ch != nil {
		return len(ch.blocks)
	}
	return 0
}

// seqsOf returns q's sequence hashes, computing them when q has none.
func seqsOf(q flash.Query, dst *flash.Scores) []flash.SeqHash {
	if q.HasSeqs() {
		return q.Seqs
	}
	s := dst.SeqScratch(len(q.Locals))[:0]
	return flash.ChainLocals(s, q.Locals)
}
