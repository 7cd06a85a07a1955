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
	idx map[flash.LocalHash]map[flash.SeqHash]map[flash.Worker]struct{}
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
}

func holdsAny(bySeq map[flash.SeqHash]map[flash.Worker]struct{}, w flash.Worker) bool {
	for _, ws := range bySeq {
		if _, ok := ws[w]; ok {
			return true
		}
	}
	return false
}

func (s *invertedState) find(q flash.Query, _ []flash.SeqHash, dst *flash.Scores, tokens int, blocks func(flash.Worker) int) {
	active := map[flash.Worker]struct{}{}
	for _, ws := range s.idx[q.Locals[0]] {
		for w := range ws {
			active[w] = struct{}{}
		}
	}
	emit := func(w flash.Worker, d int) {
		dst.Matches = append(dst.Matches, flash.Match{Worker: w, Depth: d, Tokens: d * tokens, Blocks: blocks(w), TierDepth: [flash.MaxTiers]int32{int32(d)}})
	}
	for i := 1; i < len(q.Locals) && len(active) > 0; i++ {
		bySeq := s.idx[q.Locals[i]]
		for w := range active {
			if !holdsAny(bySeq, w) {
				emit(w, i)
				delete(active, w)
			}
		}
	}
	for w := range active {
		emit(w, len(q.Locals))
	}
}

// NewInverted returns the inverted index behind an RWMutex.
func NewInverted(cfg flash.Config) flash.Index { return newLocked(cfg, newInvertedState()) }
