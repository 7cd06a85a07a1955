// Package model is the exact reference model of the flash semantics: the
// simplest obviously-correct implementation, the oracle every other backend is
// tested against. Clarity beats speed here.
//
// A Model is safe for concurrent use (one mutex guards everything); it
// allocates freely. Its Front, which resolves events into the contents each
// worker holds, is exported for the baselines, so that every backend but
// flash shares one rendering of the event semantics.
package model

import (
	"sync"

	"github.com/flashindexer/flashindexer/flash"
)

// Model implements flash.Index by the definition: a worker's depth for a
// query is the number of leading positions i at which it holds a block whose
// sequence hash is the query's seq[i].
type Model struct {
	mu       sync.Mutex
	cfg      flash.Config
	front    *Front
	closed   bool
	counters Counters
	preds    map[flash.Worker]map[contentKey]predicted
}

var (
	_ flash.Predictor   = (*Model)(nil)
	_ flash.WorkerAdder = (*Model)(nil)
)

// New returns an empty model.
func New(cfg flash.Config) *Model {
	m := &Model{cfg: cfg.Normalize(), preds: map[flash.Worker]map[contentKey]predicted{}}
	m.front = NewFront(cfg, &m.counters, nil)
	return m
}

// Apply applies ev at once and returns its rejection, if any.
func (m *Model) Apply(ev flash.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		m.counters.RejectEvent(ev.Kind, flash.ErrClosed)
		return flash.ErrClosed
	}
	err := m.front.Apply(&ev, predSink{m})
	if err == nil && ev.Kind == flash.KindCleared && ClearsAll(&ev, &m.cfg) {
		// A Cleared event of one tier of several takes the predictions
		// of the contents that leave, as Removed does (predSink).
		delete(m.preds, ev.Worker)
	}
	return err
}

// FindMatches computes every worker's depths by the definition: per tier
// t, the leading blocks it holds in t or a faster one, and the longer of
// that and the leading blocks predicted for it; its Depth, that of the
// slowest tier.
func (m *Model) FindMatches(q flash.Query, dst *flash.Scores) {
	seqs := SeqsOf(q)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counters.Add(CounterQueries, 1)
	m.counters.Add(CounterQueryBlocks, uint64(len(seqs)))
	m.find(seqs, true, dst)
	m.counters.CountHit(dst)
}

// FindExact answers q as FindMatches does with no prediction: what an
// index restored from a snapshot of the model's state would answer. It
// counts nothing.
func (m *Model) FindExact(q flash.Query, dst *flash.Scores) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.find(SeqsOf(q), false, dst)
}

// find writes the matches of seqs into dst, with the predictions when
// preds is set.
func (m *Model) find(seqs []flash.SeqHash, preds bool, dst *flash.Scores) {
	dst.Reset()
	dst.Tiers = m.cfg.Tiers
	tiers := m.cfg.NumTiers()
	now := m.cfg.Clock()
	m.front.Workers(func(w flash.Worker) {
		pred := 0
		for preds && pred < len(seqs) && m.predicts(w, pred, seqs[pred], now) {
			pred++
		}
		var match flash.Match
		exact := 0
		for t := range tiers {
			exact = 0
			for exact < len(seqs) && m.front.HoldsWithin(w, exact, seqs[exact], flash.Tier(t)) {
				exact++
			}
			match.TierDepth[t] = int32(max(exact, pred))
		}
		d := max(exact, pred)
		if d > 0 {
			match.Worker, match.Depth, match.Predicted = w, d, d-exact
			match.Tokens, match.Blocks = d*m.cfg.BlockSize, m.front.BlockCount(w)
			dst.Matches = append(dst.Matches, match)
		}
	})
}

// AddWorker gives w a slot holding nothing, if it has none.
func (m *Model) AddWorker(w flash.Worker) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	err := flash.ErrClosed
	if !m.closed {
		err = m.front.Touch(w)
	}
	if err != nil {
		m.counters.Reject(err)
	}
	return err
}

// RemoveWorker drops every DP rank of id.
func (m *Model) RemoveWorker(id uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		m.counters.Reject(flash.ErrClosed)
		return flash.ErrClosed
	}
	m.front.RemoveWorker(id, nil)
	for w := range m.preds {
		if w.ID == id {
			delete(m.preds, w)
		}
	}
	return nil
}

// BlockCount returns the number of blocks (engine ids) w holds.
func (m *Model) BlockCount(w flash.Worker) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.front.BlockCount(w)
}

// Known reports whether w holds a worker slot.
func (m *Model) Known(w flash.Worker) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.front.Known(w)
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
