package baseline

import (
	"sync"
	"sync/atomic"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/model"
)

// cnode is a radix node with its own reader-writer lock.
type cnode struct {
	mu       sync.RWMutex
	parent   *cnode
	local    flash.LocalHash
	children map[flash.LocalHash]*cnode
	workers  map[flash.Worker]struct{}
	slow     map[flash.Worker]flash.Tier // the workers whose fastest tier is not 0
}

func newCNode(parent *cnode, local flash.LocalHash) *cnode {
	return &cnode{parent: parent, local: local, children: map[flash.LocalHash]*cnode{}, workers: map[flash.Worker]struct{}{}}
}

// ConcurrentRadix is the seed's fifth generation: the radix tree with an
// RWMutex per node. Queries run on the caller's goroutine taking read locks
// node by node; events go to sticky writer goroutines (by worker ID), each
// owning its workers' fronts and lookups, so no two writers touch one
// worker's state. A child is created and joined under its parent's write
// lock, and pruned under it, so writers never lose a node to each other.
type ConcurrentRadix struct {
	mailbox
	root     *cnode
	lanes    []*clane
	cfg      flash.Config
	wg       sync.WaitGroup
	counters model.Counters
	slots    atomic.Int64
}

type clane struct {
	t      *ConcurrentRadix
	front  *model.Front
	lookup map[flash.Worker]map[contentKey]*cnode
	inbox  chan request
}

var _ flash.Index = (*ConcurrentRadix)(nil)

// NewConcurrentRadix returns the concurrent radix tree with the given number
// of writer goroutines (at least 1).
func NewConcurrentRadix(cfg flash.Config, writers int) *ConcurrentRadix {
	t := &ConcurrentRadix{root: newCNode(nil, 0), cfg: cfg.Normalize()}
	for i := 0; i < max(1, writers); i++ {
		ln := &clane{t: t, lookup: map[flash.Worker]map[contentKey]*cnode{}, inbox: make(chan request, actorQueue)}
		ln.front = model.NewFront(cfg, &t.counters, &t.slots)
		t.lanes = append(t.lanes, ln)
		t.wg.Add(1)
		go ln.loop()
	}
	return t
}

func (ln *clane) loop() {
	defer ln.t.wg.Done()
	serve(ln.inbox, ln.front, ln, nil)
}

func (ln *clane) Add(w flash.Worker, p model.Place) {
	lk := ln.lookup[w]
	if lk == nil {
		lk = map[contentKey]*cnode{}
		ln.lookup[w] = lk
	}
	parent := ln.t.root
	if p.Pos > 0 {
		parent = lk[contentKey{p.Pos - 1, p.Parent}]
	}
	parent.mu.Lock()
	n := parent.children[p.Local]
	if n == nil {
		n = newCNode(parent, p.Local)
		parent.children[p.Local] = n
	}
	n.mu.Lock()
	n.workers[w] = struct{}{}
	n.mu.Unlock()
	parent.mu.Unlock()
	lk[contentKey{p.Pos, p.Seq}] = n
}

func (ln *clane) Del(w flash.Worker, p model.Place) {
	lk := ln.lookup[w]
	k := contentKey{p.Pos, p.Seq}
	n := lk[k]
	delete(lk, k)
	if len(lk) == 0 {
		delete(ln.lookup, w)
	}
	n.mu.Lock()
	delete(n.workers, w)
	delete(n.slow, w)
	empty := len(n.workers) == 0 && len(n.children) == 0
	n.mu.Unlock()
	for empty && n != ln.t.root {
		parent := n.parent
		parent.mu.Lock()
		n.mu.Lock()
		if len(n.workers) == 0 && len(n.children) == 0 && parent.children[n.local] == n {
			delete(parent.children, n.local)
		}
		n.mu.Unlock()
		empty = len(parent.workers) == 0 && len(parent.children) == 0
		parent.mu.Unlock()
		n = parent
	}
}

func (ln *clane) Fastest(w flash.Worker, p model.Place, t flash.Tier) {
	n := ln.lookup[w][contentKey{p.Pos, p.Seq}]
	n.mu.Lock()
	setTier(&n.slow, w, t)
	n.mu.Unlock()
}

func (t *ConcurrentRadix) lane(id uint64) *clane {
	return t.lanes[(id*0x9E3779B97F4A7C15>>32)%uint64(len(t.lanes))]
}

// Apply hands ev to its worker's writer.
func (t *ConcurrentRadix) Apply(ev flash.Event) error {
	return t.post(t.lane(ev.Worker.ID).inbox, request{kind: reqEvent, ev: owned(ev)}, &t.counters)
}

// FindMatches walks the tree on the caller's goroutine under read locks.
func (t *ConcurrentRadix) FindMatches(q flash.Query, dst *flash.Scores) {
	dst.Reset()
	defer t.counters.CountHit(dst)
	if !countQuery(&t.counters, q) {
		return
	}
	t.root.mu.RLock()
	n := t.root.children[q.Locals[0]]
	t.root.mu.RUnlock()
	if n == nil {
		return
	}
	a := newAnswer(dst, &t.cfg, t.BlockCount)
	n.mu.RLock()
	active := make(map[flash.Worker]struct{}, len(n.workers))
	for w := range n.workers {
		active[w] = struct{}{}
		a.at(w, 0, n.slow[w])
	}
	n.mu.RUnlock()
	// Depths are emitted after the walk: BlockCount waits on the writers,
	// which may wait on a node's lock.
	depth := make(map[flash.Worker]int, len(active))
	for i := 1; i < len(q.Locals) && len(active) > 0; i++ {
		n.mu.RLock()
		next := n.children[q.Locals[i]]
		n.mu.RUnlock()
		if next == nil {
			for w := range active {
				depth[w] = i
			}
			active = nil
			break
		}
		next.mu.RLock()
		for w := range active {
			if _, ok := next.workers[w]; !ok {
				depth[w] = i
				delete(active, w)
			} else if len(next.slow) > 0 {
				a.at(w, i, next.slow[w])
			}
		}
		next.mu.RUnlock()
		n = next
	}
	for w := range active {
		depth[w] = len(q.Locals)
	}
	for w, d := range depth {
		a.emit(w, d)
	}
}

// RemoveWorker drops every rank of id, on its writer.
func (t *ConcurrentRadix) RemoveWorker(id uint64) error {
	return t.post(t.lane(id).inbox, request{kind: reqRemoveWorker, id: id}, &t.counters)
}

// BlockCount asks w's writer.
func (t *ConcurrentRadix) BlockCount(w flash.Worker) int {
	n := 0
	if !t.send(t.lane(w.ID).inbox, request{kind: reqBlockCount, w: w, n: &n}, true) {
		return t.lane(w.ID).front.BlockCount(w) // closed: writers are gone
	}
	return n
}

// Flush waits until every writer has applied what was sent before.
func (t *ConcurrentRadix) Flush() {
	for _, ln := range t.lanes {
		t.send(ln.inbox, request{kind: reqFlush}, true)
	}
}

// Stats returns the counters.
func (t *ConcurrentRadix) Stats() flash.Stats { return t.counters.Snapshot() }

// Close drains and stops the writers.
func (t *ConcurrentRadix) Close() error {
	if !t.close() {
		return flash.ErrClosed
	}
	for _, ln := range t.lanes {
		stop(ln.inbox)
	}
	t.wg.Wait()
	return nil
}
