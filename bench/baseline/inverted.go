package baseline

import (
	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/model"
)

// invertedState is the seed's third generation: local hash → sequence hash →
// set of workers. A query walks the query once; at each block the active
// workers that hold none of the block's sequence hashes drop out, each once:
// O(D + W). Merging the sets of every sequence hash of a local hash is what
// makes it blind to chunk collisions.
type invertedState struct {
	idx  map[flash.LocalHash]map[flash.SeqHash]map[flash.Worker]struct{}
	slow map[contentOf]flash.Tier // fastest tiers but 0
}

// contentOf names a worker's content by its sequence hash, as the index does.
type contentOf struct {
	w   flash.Worker
	seq flash.SeqHash
}

func newInvertedState() *invertedState {
	return &invertedState{idx: map[flash.LocalHash]map[flash.SeqHash]map[flash.Worker]struct{}{}}
}

func (s *invertedState) Add(w flash.Worker, p model.Place) {
	bySeq := s.idx[p.Local]
	if bySeq == nil {
		bySeq = map[flash.SeqHash]map[flash.Worker]struct{}{}
		s.idx[p.Local] = bySeq
	}
	ws := bySeq[p.Seq]
	if ws == nil {
		ws = map[flash.Worker]struct{}{}
		bySeq[p.Seq] = ws
	}
	ws[w] = struct{}{}
}

// del uses the reverse lookup the front keeps (worker → engine id → place),
// so a remove touches one set instead of scanning the index.
func (s *invertedState) Del(w flash.Worker, p model.Place) {
	bySeq := s.idx[p.Local]
	ws := bySeq[p.Seq]
	delete(ws, w)
	if len(ws) == 0 {
		delete(bySeq, p.Seq)
	}
	if len(bySeq) == 0 {
		delete(s.idx, p.Local)
	}
	delete(s.slow, contentOf{w, p.Seq})
}

func (s *invertedState) Fastest(w flash.Worker, p model.Place, t flash.Tier) {
	setTier(&s.slow, contentOf{w, p.Seq}, t)
}

// holdsAny reports whether w holds any of bySeq's blocks, and the fastest
// tier it holds one in.
func (s *invertedState) holdsAny(bySeq map[flash.SeqHash]map[flash.Worker]struct{}, w flash.Worker) (bool, flash.Tier) {
	held, f := false, flash.Tier(flash.MaxTiers)
	for seq, ws := range bySeq {
		if _, ok := ws[w]; ok {
			if held = true; len(s.slow) == 0 {
				return true, 0
			}
			f = min(f, s.slow[contentOf{w, seq}])
		}
	}
	return held, f
}

func (s *invertedState) find(q flash.Query, _ []flash.SeqHash, a *answer) {
	active := map[flash.Worker]struct{}{}
	for _, ws := range s.idx[q.Locals[0]] {
		for w := range ws {
			active[w] = struct{}{}
		}
	}
	if len(s.slow) > 0 {
		for w := range active {
			_, f := s.holdsAny(s.idx[q.Locals[0]], w)
			a.at(w, 0, f)
		}
	}
	for i := 1; i < len(q.Locals) && len(active) > 0; i++ {
		bySeq := s.idx[q.Locals[i]]
		for w := range active {
			if held, f := s.holdsAny(bySeq, w); !held {
				a.emit(w, i)
				delete(active, w)
			} else {
				a.at(w, i, f)
			}
		}
	}
	for w := range active {
		a.emit(w, len(q.Locals))
	}
}

// NewInverted returns the inverted index behind an RWMutex.
func NewInverted(cfg flash.Config) flash.Index { return newLocked(cfg, newInvertedState()) }
