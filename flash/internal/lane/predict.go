package lane

import (
	"math"
	"time"
	"unsafe"

	"github.com/flashindexer/flashindexer/flash/internal/worker"
	"github.com/flashindexer/flashindexer/internal/chain"
)

// pnode is one predicted block of a worker. Links are node indexes + 1 (0:
// none): its parent (one position up), its first child, its siblings.
type pnode struct {
	seq              uint64
	until            time.Duration
	pos              uint32
	parent, kid      uint32
	next, prev, heap uint32 // heap: its place in the worker's heap
}

// preds is one worker's predicted blocks: a tree (prefix-closed: a node's
// parent is predicted too), a map from content to node, and a min-heap in
// leaving order (before), whose top is always a leaf: a parent never
// expires before its child, and among equal expiries the deeper leaves
// first.
type preds struct {
	byContent worker.ContentMap
	nodes     []pnode
	free      []uint32
	heap      []uint32
}

func (p *preds) len() int { return len(p.heap) }

// bytes is the memory p holds.
func (p *preds) bytes() int {
	return cap(p.nodes)*int(unsafe.Sizeof(pnode{})) + 4*(cap(p.heap)+cap(p.free)) + p.byContent.Bytes()
}

// before reports whether node a leaves before node b: the earlier expiry,
// then the deeper, then the lower sequence hash.
func (p *preds) before(a, b uint32) bool {
	y := &p.nodes[b]
	return p.leavesBefore(a, y.until, y.pos, y.seq)
}

// leavesBefore reports whether node a leaves before a block (until, pos,
// seq), in the order of before.
func (p *preds) leavesBefore(a uint32, until time.Duration, pos uint32, seq uint64) bool {
	x := &p.nodes[a]
	if x.until != until {
		return x.until < until
	}
	if x.pos != pos {
		return x.pos > pos
	}
	return x.seq < seq
}

// predsKeepNodes: a worker's predicted blocks keep the room of up to 256
// nodes (about 10 KiB with the heap and the content map) whatever they
// hold, so that predictions that come and go at a steady size allocate
// nothing; past it, their memory follows what they hold (settle).
const predsKeepNodes = 256

// settle gives back the room of w's predicted blocks once they hold under
// a quarter of it, past predsKeepNodes: all of it when they hold none.
func (ln *lane) settle(w Worker, p *preds) {
	if len(p.nodes) <= predsKeepNodes || p.len()*4 >= len(p.nodes) {
		return
	}
	if p.len() == 0 {
		delete(ln.preds, w)
		return
	}
	p.compact()
}

// compact renumbers the live nodes 0 to len-1, in heap order, into arrays
// of their size, and rebuilds the content map.
func (p *preds) compact() {
	renum := make([]uint32, len(p.nodes)) // old index → new index + 1
	nodes := make([]pnode, 0, p.len())
	heap := make([]uint32, p.len())
	for h, ni := range p.heap {
		renum[ni] = uint32(h) + 1
		nodes = append(nodes, p.nodes[ni])
		heap[h] = uint32(h)
	}
	link := func(x uint32) uint32 {
		if x == 0 {
			return 0
		}
		return renum[x-1]
	}
	p.byContent.Reset()
	for i := range nodes {
		n := &nodes[i]
		n.parent, n.kid, n.next, n.prev = link(n.parent), link(n.kid), link(n.next), link(n.prev)
		p.byContent.Put(n.pos, n.seq, uint32(i))
	}
	p.nodes, p.heap, p.free = nodes, heap, nil
}

// expiry is now+ttl, saturated: a ttl past the clock's range never ends.
func expiry(now, ttl time.Duration) time.Duration {
	if ttl > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + ttl
}

func (p *preds) swap(i, j uint32) {
	p.heap[i], p.heap[j] = p.heap[j], p.heap[i]
	p.nodes[p.heap[i]].heap, p.nodes[p.heap[j]].heap = i, j
}

func (p *preds) up(i uint32) {
	for i > 0 {
		parent := (i - 1) / 2
		if !p.before(p.heap[i], p.heap[parent]) {
			return
		}
		p.swap(i, parent)
		i = parent
	}
}

func (p *preds) down(i uint32) {
	n := uint32(len(p.heap))
	for {
		least, l := i, 2*i+1
		if l < n && p.before(p.heap[l], p.heap[least]) {
			least = l
		}
		if r := l + 1; r < n && p.before(p.heap[r], p.heap[least]) {
			least = r
		}
		if least == i {
			return
		}
		p.swap(i, least)
		i = least
	}
}

// add makes a node for content (pos, seq) under parent (+1) and returns it.
func (p *preds) add(pos uint32, seq uint64, until time.Duration, parent uint32) uint32 {
	var ni uint32
	if k := len(p.free); k > 0 {
		ni, p.free = p.free[k-1], p.free[:k-1]
	} else {
		ni = uint32(len(p.nodes))
		p.nodes = append(p.nodes, pnode{})
	}
	p.nodes[ni] = pnode{seq: seq, until: until, pos: pos, parent: parent, heap: uint32(len(p.heap))}
	if parent != 0 {
		par := &p.nodes[parent-1]
		if par.kid != 0 {
			p.nodes[par.kid-1].prev = ni + 1
		}
		p.nodes[ni].next, par.kid = par.kid, ni+1
	}
	p.heap = append(p.heap, ni)
	p.up(uint32(len(p.heap) - 1))
	p.byContent.Put(pos, seq, ni)
	return ni
}

// unlink takes leaf ni out of the tree, the heap and the map, and frees it.
func (p *preds) unlink(ni uint32) {
	n := &p.nodes[ni]
	if n.prev != 0 {
		p.nodes[n.prev-1].next = n.next
	} else if n.parent != 0 {
		p.nodes[n.parent-1].kid = n.next
	}
	if n.next != 0 {
		p.nodes[n.next-1].prev = n.prev
	}
	h, last := n.heap, uint32(len(p.heap)-1)
	if h != last {
		p.swap(h, last)
	}
	p.heap = p.heap[:last]
	if h != last {
		p.up(h)
		p.down(h)
	}
	p.byContent.Del(n.pos, n.seq)
	p.free = append(p.free, ni)
}

// find returns the node of content (pos, seq).
func (p *preds) find(pos uint32, seq uint64) (uint32, bool) {
	return p.byContent.Get(pos, seq)
}

// predict records that w holds the blocks of locals until ttl after now,
// the time of the Predict call: the lane applies predictions and expiries in
// the order of their calls, each at its call's time, as if at once.
func (ln *lane) predict(w Worker, locals []uint64, now, ttl time.Duration) error {
	ln.expire(now)
	ws, _, err := ln.worker(w, nil)
	if err != nil {
		return err
	}
	p := ln.preds[w]
	if p == nil {
		p = &preds{}
		p.byContent.Init(ln.own.K0, ln.own.K1)
		ln.preds[w] = p
	}
	until, added, limit := expiry(now, ttl), 0, ln.s.o.MaxPredicted
	var seq uint64
	parent := uint32(0)
	for i, l := range locals {
		if i == 0 {
			seq = l
		} else {
			seq = chain.Chain(seq, l)
		}
		pos := uint32(i)
		ni, ok := p.find(pos, seq)
		if ok {
			if n := &p.nodes[ni]; until > n.until {
				n.until = until
				p.down(n.heap)
			}
		} else {
			// The blocks from here on are new (the tree is prefix-closed),
			// expire together and are each deeper than the last. Past the
			// cap, a new block stays only if a held one leaves before it
			// (always a leaf, never this one's parent); if it would leave
			// first, so would every block after it: the prediction keeps
			// what the cap allows without making the rest.
			if p.len() >= limit {
				if !p.leavesBefore(p.heap[0], until, pos, seq) {
					break
				}
				ln.dropTree(p, ws.Slot, p.heap[0])
			}
			ni = p.add(pos, seq, until, parent)
			ln.predAttach(i, seq, ws.Slot) // parent first: what a reader sees stays prefix-closed
			added++
		}
		parent = ni + 1
	}
	ln.npred += added
	ln.s.predicted.Add(int64(added))
	if p.len() > 0 {
		ln.next = min(ln.next, until)
	}
	ln.counters.add(Predictions, 1)
	return nil
}

// dropTree drops predicted node i and every node below it, children
// first, clearing their bits.
func (ln *lane) dropTree(p *preds, slot int, i uint32) {
	st := append(ln.pstack[:0], i)
	for len(st) > 0 {
		j := st[len(st)-1]
		if k := p.nodes[j].kid; k != 0 {
			st = append(st, k-1)
			continue
		}
		st = st[:len(st)-1]
		n := &p.nodes[j]
		ln.predDetach(int(n.pos), n.seq, slot)
		p.unlink(j)
		ln.npred--
		ln.s.predicted.Add(-1)
	}
	ln.pstack = st
}

// dropGone drops the predictions of the contents that the last Remove
// took from the worker of p, and of every predicted block below them.
func (ln *lane) dropGone(w Worker, p *preds, slot int) {
	for _, c := range ln.own.Gone {
		if ni, ok := p.find(c.Pos, c.Seq); ok {
			ln.dropTree(p, slot, ni)
		}
	}
	ln.own.Gone = ln.own.Gone[:0]
	ln.settle(w, p)
}

// dropAll drops every prediction of w, leaves first.
func (ln *lane) dropAll(w Worker, slot int) {
	if p := ln.preds[w]; p != nil {
		for p.len() > 0 {
			ln.dropTree(p, slot, p.heap[0])
		}
		ln.settle(w, p)
	}
}

// expire drops the predictions that ended by now, if any may have.
func (ln *lane) expire(now time.Duration) {
	if ln.npred == 0 || now < ln.next {
		return
	}
	next := time.Duration(math.MaxInt64)
	for w, p := range ln.preds {
		slot := ln.workers[w].Slot
		for p.len() > 0 && p.nodes[p.heap[0]].until <= now {
			ln.dropTree(p, slot, p.heap[0])
		}
		ln.settle(w, p)
		if p.len() > 0 {
			next = min(next, p.nodes[p.heap[0]].until)
		}
	}
	ln.next = next
}

// predAttach sets slot's bits of a predicted content: in an index of
// several tiers, its place of each (a prediction counts in the fastest),
// the slowest first, as the exact blocks' places are set (worker.recut).
func (ln *lane) predAttach(pos int, seq uint64, slot int) {
	t := ln.own.Tiers
	for c := t - 1; c >= 0; c-- {
		ln.pw.Attach(pos, seq, slot*t+c)
	}
}

// predDetach clears what predAttach set, the fastest place first.
func (ln *lane) predDetach(pos int, seq uint64, slot int) {
	t := ln.own.Tiers
	for c := range t {
		ln.pw.Detach(pos, seq, slot*t+c)
	}
}
