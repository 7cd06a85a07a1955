package baseline

import (
	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/model"
)

// naiveState is the seed's first generation: worker → local hash → set of
// sequence hashes. A query walks every worker along the query and asks, at
// each block, whether the worker holds any block with that local hash.
type naiveState struct {
	idx map[flash.Worker]map[flash.LocalHash]map[flash.SeqHash]struct{}
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
}

func (s *naiveState) find(q flash.Query, _ []flash.SeqHash, dst *flash.Scores, tokens int, blocks func(flash.Worker) int) {
	for w, m := range s.idx {
		d := 0
		for d < len(q.Locals) && len(m[q.Locals[d]]) > 0 {
			d++
		}
		if d > 0 {
			dst.Matches = append(dst.Matches, flash.Match{Worker: w, Depth: d, Tokens: d * tokens, Blocks: blocks(w), TierDepth: [flash.MaxTiers]int32{int32(d)}})
		}
	}
}

// NewNaive returns the naive nested map behind an RWMutex: events take the
// write lock, queries share the read lock.
func NewNaive(cfg flash.Config) flash.Index { return newLocked(cfg, newNaiveState()) }

// NewActor returns the naive nested map owned by one goroutine: every event
// and query is a message to it.
func NewActor(cfg flash.Config) flash.Index { return newActor(cfg, newNaiveState()) }
