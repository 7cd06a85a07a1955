package baseline

import (
	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/model"
)

// rnode is one block of the radix tree: children keyed by local hash (a
// parent and a local hash determine the prefix, so the tree is exact), and
// the workers holding it.
type rnode struct {
	parent   *rnode
	local    flash.LocalHash
	children map[flash.LocalHash]*rnode
	workers  map[flash.Worker]struct{}
	slow     map[flash.Worker]flash.Tier // the workers whose fastest tier is not 0
}

func newRNode(parent *rnode, local flash.LocalHash) *rnode {
	return &rnode{parent: parent, local: local, children: map[flash.LocalHash]*rnode{}, workers: map[flash.Worker]struct{}{}}
}

// radixState is the seed's fourth generation: the tree plus a per-worker
// lookup content → node for events.
type radixState struct {
	root   *rnode
	lookup map[flash.Worker]map[contentKey]*rnode
}

func newRadixState() *radixState {
	return &radixState{root: newRNode(nil, 0), lookup: map[flash.Worker]map[contentKey]*rnode{}}
}

func (s *radixState) Add(w flash.Worker, p model.Place) {
	lk := s.lookup[w]
	if lk == nil {
		lk = map[contentKey]*rnode{}
		s.lookup[w] = lk
	}
	parent := s.root
	if p.Pos > 0 {
		// The front adds a content only while the worker holds its parent.
		parent = lk[contentKey{p.Pos - 1, p.Parent}]
	}
	n := parent.children[p.Local]
	if n == nil {
		n = newRNode(parent, p.Local)
		parent.children[p.Local] = n
	}
	n.workers[w] = struct{}{}
	lk[contentKey{p.Pos, p.Seq}] = n
}

func (s *radixState) Del(w flash.Worker, p model.Place) {
	lk := s.lookup[w]
	k := contentKey{p.Pos, p.Seq}
	n := lk[k]
	delete(lk, k)
	if len(lk) == 0 {
		delete(s.lookup, w)
	}
	delete(n.workers, w)
	delete(n.slow, w)
	for n != s.root && len(n.workers) == 0 && len(n.children) == 0 {
		delete(n.parent.children, n.local)
		n = n.parent
	}
}

func (s *radixState) Fastest(w flash.Worker, p model.Place, t flash.Tier) {
	setTier(&s.lookup[w][contentKey{p.Pos, p.Seq}].slow, w, t)
}

func (s *radixState) find(q flash.Query, _ []flash.SeqHash, a *answer) {
	n := s.root.children[q.Locals[0]]
	if n == nil {
		return
	}
	active := make(map[flash.Worker]struct{}, len(n.workers))
	for w := range n.workers {
		active[w] = struct{}{}
		a.at(w, 0, n.slow[w])
	}
	for i := 1; i < len(q.Locals) && len(active) > 0; i++ {
		n = n.children[q.Locals[i]]
		for w := range active {
			if n == nil {
				a.emit(w, i)
				continue
			}
			if _, ok := n.workers[w]; !ok {
				a.emit(w, i)
				delete(active, w)
			} else if len(n.slow) > 0 {
				a.at(w, i, n.slow[w])
			}
		}
		if n == nil {
			return
		}
	}
	for w := range active {
		a.emit(w, len(q.Locals))
	}
}

// NewRadix returns the radix tree owned by one goroutine (an actor).
func NewRadix(cfg flash.Config) flash.Index { return newActor(cfg, newRadixState()) }

// contentKey names a content in a worker's lookup.
type contentKey struct {
	pos int
	seq flash.SeqHash
}
