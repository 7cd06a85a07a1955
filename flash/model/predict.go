package model

import (
	"cmp"
	"math"
	"time"

	"github.com/flashindexer/flashindexer/flash"
)

// predicted is one predicted block of a worker: until when it lasts, and
// the sequence hash of its parent (the predicted block one position up; 0
// at position 0).
type predicted struct {
	until  time.Duration
	parent flash.SeqHash
}

// Predict records that w will hold q's blocks until ttl from now, by the
// definition (package flash, Predictions): each block's expiry becomes the
// later of its own and now+ttl; past Config.MaxPredicted the blocks that
// expire first leave first, the deepest first among equals.
func (m *Model) Predict(w flash.Worker, q flash.Query, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	err := flash.ErrClosed
	if !m.closed {
		err = checkPrediction(&m.cfg, &q, ttl)
	}
	if err == nil {
		err = m.front.Touch(w)
	}
	if err != nil {
		m.counters.Add(CounterPredictionsRejected, 1)
		return err
	}
	now := m.cfg.Clock()
	m.expire(now)
	seqs := q.Seqs
	if !q.HasSeqs() {
		seqs = flash.ChainLocals(nil, q.Locals)
	}
	ps := m.preds[w]
	if ps == nil {
		ps = map[contentKey]predicted{}
		m.preds[w] = ps
	}
	until := now + ttl
	if ttl > math.MaxInt64-now {
		until = math.MaxInt64 // a ttl past the clock's range never ends
	}
	for i, s := range seqs {
		k := contentKey{i, s}
		p := ps[k]
		p.until = max(p.until, until)
		if i > 0 {
			p.parent = seqs[i-1]
		}
		ps[k] = p
	}
	for len(ps) > m.cfg.MaxPredicted {
		delete(ps, firstOut(ps))
	}
	m.counters.Add(CounterPredictions, 1)
	return nil
}

// firstOut returns the predicted block that leaves first: the earliest
// expiry, then the deepest, then the lowest sequence hash. A parent never
// expires before its child, so this is always a leaf.
func firstOut(ps map[contentKey]predicted) contentKey {
	var out contentKey
	var until time.Duration
	first := true
	for k, p := range ps {
		c := cmp.Compare(p.until, until)
		if c == 0 {
			c = cmp.Compare(out.pos, k.pos)
		}
		if c == 0 {
			c = cmp.Compare(k.seq, out.seq)
		}
		if first || c < 0 {
			out, until, first = k, p.until, false
		}
	}
	return out
}

// DropPredictions drops every prediction of w, as a Restore of w into an
// index does (snapshots hold none).
func (m *Model) DropPredictions(w flash.Worker) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.preds, w)
}

// expire drops every prediction that ended at or before now.
func (m *Model) expire(now time.Duration) {
	for _, ps := range m.preds {
		for k, p := range ps {
			if p.until <= now {
				delete(ps, k)
			}
		}
	}
}

// predicts reports whether w has an unexpired prediction of (pos, seq).
func (m *Model) predicts(w flash.Worker, pos int, seq flash.SeqHash, now time.Duration) bool {
	p, ok := m.preds[w][contentKey{pos, seq}]
	return ok && p.until > now
}

// predSink drops predictions as exact contents leave their workers.
type predSink struct{ m *Model }

func (predSink) Add(flash.Worker, Place) {}

// Del drops w's prediction of p's content and of every predicted block
// below it, so that what w is seen to hold stays prefix-closed.
func (s predSink) Del(w flash.Worker, p Place) {
	ps := s.m.preds[w]
	var below []contentKey
	for k := range ps {
		a := k
		for a.pos > p.Pos {
			a = contentKey{a.pos - 1, ps[a].parent}
		}
		if a == (contentKey{p.Pos, p.Seq}) {
			below = append(below, k)
		}
	}
	for _, k := range below {
		delete(ps, k)
	}
}
