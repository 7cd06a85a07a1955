// Package model is the exact reference model of the flash semantics: the
// simplest obviously-correct implementation, the oracle every other backend is
// tested against. Clarity beats speed here.
//
// A Model is safe for concurrent use (one mutex guards everything); it
// allocates freely.
package model

import (
	"sync"

	"github.com/flashindexer/flashindexer/flash"
)

// place is where a block sits in a worker's cache: its position and the
// sequence hash of the prefix through it.
type place struct {
	pos int
	seq flash.SeqHash
}

type worker struct {
	blocks  map[flash.ExternalHash]place // what the worker holds, by engine id
	content map[place]int                // how many held ids carry each place
}

// Model implements flash.Index by the definition: a worker's depth for a
// query is the number of leading positions i at which it holds a block whose
// sequence hash is the query's seq[i].
type Model struct {
	mu       sync.Mutex
	cfg      flash.Config
	workers  map[flash.Worker]*worker
	closed   bool
	counters flash.Counters
}

var _ flash.Index = (*Model)(nil)

// New returns an empty model.
func New(cfg flash.Config) *Model {
	return &Model{cfg: cfg.Normalize(), workers: map[flash.Worker]*worker{}}
}

// Apply applies ev at once and returns its rejection, if any.
func (m *Model) Apply(ev flash.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	err := m.apply(&ev)
	if err != nil {
		m.counters.Reject(err)
	} else {
		m.counters.Add(flash.CounterEventsApplied, 1)
	}
	return err
}

func (m *Model) apply(ev *flash.Event) error {
	if m.closed {
		return flash.ErrClosed
	}
	if err := m.cfg.CheckEvent(ev); err != nil {
		return err
	}
	w := m.workers[ev.Worker]
	switch ev.Kind {
	case flash.KindStored:
		return m.store(ev, w)
	case flash.KindRemoved:
		for _, h := range ev.Hashes {
			p, ok := place{}, false
			if w != nil {
				p, ok = w.blocks[h]
			}
			if !ok {
				m.counters.Add(flash.CounterRemovesUnknown, 1)
				continue
			}
			delete(w.blocks, h)
			if w.content[p]--; w.content[p] == 0 {
				delete(w.content, p)
			}
			m.counters.Add(flash.CounterBlocksRemoved, 1)
		}
	case flash.KindCleared:
		if w != nil {
			clear(w.blocks)
			clear(w.content)
		}
		m.counters.Add(flash.CounterClears, 1)
	}
	return nil
}

func (m *Model) store(ev *flash.Event, w *worker) error {
	pos, prev := 0, flash.SeqHash(0)
	if ev.HasParent {
		if w == nil {
			return flash.ErrUnknownParent
		}
		p, ok := w.blocks[ev.Parent]
		if !ok {
			return flash.ErrUnknownParent
		}
		pos, prev = p.pos+1, p.seq
	}
	// Validate the whole batch before changing anything.
	if pos+len(ev.Blocks) > m.cfg.MaxDepth {
		return flash.ErrTooDeep
	}
	places := make([]place, len(ev.Blocks))
	inBatch := map[flash.ExternalHash]bool{}
	for i, b := range ev.Blocks {
		seq := flash.SeqHash(b.Local)
		if pos+i > 0 {
			seq = flash.Chain(prev, b.Local)
		}
		prev = seq
		places[i] = place{pos + i, seq}
		if inBatch[b.Hash] {
			return flash.ErrHashConflict
		}
		inBatch[b.Hash] = true
		if w != nil {
			if held, ok := w.blocks[b.Hash]; ok && held != places[i] {
				return flash.ErrHashConflict
			}
		}
	}
	if w == nil {
		if len(m.workers) >= m.cfg.MaxWorkers {
			return flash.ErrTooManyWorkers
		}
		w = &worker{blocks: map[flash.ExternalHash]place{}, content: map[place]int{}}
		m.workers[ev.Worker] = w
	}
	for i, b := range ev.Blocks {
		if _, ok := w.blocks[b.Hash]; ok {
			m.counters.Add(flash.CounterBlocksDuplicate, 1)
			continue
		}
		w.blocks[b.Hash] = places[i]
		w.content[places[i]]++
		m.counters.Add(flash.CounterBlocksStored, 1)
	}
	return nil
}

// FindMatches computes every worker's depth by the definition.
func (m *Model) FindMatches(q flash.Query, dst *flash.Scores) {
	dst.Reset()
	seqs := q.Seqs
	if !q.HasSeqs() {
		seqs = flash.ChainLocals(nil, q.Locals)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counters.Add(flash.CounterQueries, 1)
	m.counters.Add(flash.CounterQueryBlocks, uint64(len(seqs)))
	for id, w := range m.workers {
		d := 0
		for d < len(seqs) && w.content[place{d, seqs[d]}] > 0 {
			d++
		}
		if d > 0 {
			dst.Add(flash.Match{Worker: id, Depth: d, Tokens: d * m.cfg.BlockSize, Blocks: len(w.blocks)})
		}
	}
}

// RemoveWorker drops every DP rank of id.
func (m *Model) RemoveWorker(id uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return flash.ErrClosed
	}
	removed := false
	for w := range m.workers {
		if w.ID == id {
			delete(m.workers, w)
			removed = true
		}
	}
	if removed {
		m.counters.Add(flash.CounterWorkersRemoved, 1)
	}
	return nil
}

// BlockCount returns the number of blocks (engine ids) w holds.
func (m *Model) BlockCount(w flash.Worker) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if x := m.workers[w]; x != nil {
		return len(x.blocks)
	}
	return 0
}

// Known reports whether w holds a worker slot.
func (m *Model) Known(w flash.Worker) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.workers[w] != nil
}

// Workers returns how many workers are known (hold a slot).
func (m *Model) Workers() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.workers)
}

// Flush returns at once: the model applies every event inside Apply.
func (m *Model) Flush() {}

// Stats returns the model's counters.
func (m *Model) Stats() flash.Stats { return m.counters.Snapshot() }

// Close marks the model closed; later events return flash.ErrClosed.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return flash.ErrClosed
	}
	m.closed = true
	return nil
}
