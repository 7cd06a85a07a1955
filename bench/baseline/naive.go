package baseline

import (
	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/model"
)

// naiveState is the seed's first generation: worker → local hash → set of
// sequence hashes. A query walks every worker along the query and asks, at
// each block, whether the worker holds any block with that local hash.
type naiveState struct {
	idx  map[flash.Worker]map[flash.LocalHash]map[flash.SeqHash]struct{}
	slow map[flash.Worker]map[flash.SeqHash]flash.Tier // fastest tiers but 0
}

func newNaiveState() *naiveState {
	return &naiveState{idx: map[flash.Worker]map[flash.LocalHash]map[flash.SeqHash]struct{}{}}
}

func (s *naiveState) Add(w flash.Worker, p model.Place) {
	m := s.idx[w]
	if m == nil {
		m = map[flash.LocalHash]map[flash.SeqHash]struct{}{}
		s.idx[w] = m
	}
	set := m[p.Local]
	if set == nil {
		set = map[flash.SeqHash]struct{}{}
		m[p.Local] = set
	}
	set[p.Seq] = struct{}{}
}

func (s *naiveState) Del(w flash.Worker, p model.Place) {
	m := s.idx[w]
	delete(m[p.Local], p.Seq)
	if len(m[p.Local]) == 0 {
		delete(m, p.Local)
	}
	if len(m) == 0 {
		delete(s.idx, w)
	}
	if sl, ok := s.slow[w]; ok {
		if delete(sl, p.Seq); len(sl) == 0 {
			delete(s.slow, w)
		}
	}
}

func (s *naiveState) Fastest(w flash.Worker, p model.Place, t flash.Tier) {
	if s.slow == nil {
		s.slow = map[flash.Worker]map[flash.SeqHash]flash.Tier{}
	}
	sl := s.slow[w]
	if setTier(&sl, p.Seq, t); len(sl) == 0 {
		delete(s.slow, w)
	} else {
		s.slow[w] = sl
	}
}

func (s *naiveState) find(q flash.Query, _ []flash.SeqHash, a *answer) {
	for w, m := range s.idx {
		sl := s.slow[w]
		d := 0
		for d < len(q.Locals) && len(m[q.Locals[d]]) > 0 {
			if len(sl) > 0 {
				// The fastest tier of any block with this chunk.
				f := flash.Tier(flash.MaxTiers)
				for seq := range m[q.Locals[d]] {
					f = min(f, sl[seq])
				}
				a.at(w, d, f)
			}
			d++
		}
		if d > 0 {
			a.emit(w, d)
		}
	}
}

// NewNaive returns the naive nested map behind an RWMutex: events take the
// write lock, queries share the read lock.
func NewNaive(cfg flash.Config) flash.Index { return newLocked(cfg, newNaiveState()) }

// NewActor returns the naive nested map owned by one goroutine: every event
// and query is a message to it.
func NewActor(cfg flash.Config) flash.Index { return newActor(cfg, newNaiveState()) }
