package flash

import "github.com/flashindexer/flashindexer/arena"

// node is one content (position, sequence hash) a worker holds or held: the
// worker's private view of a block. Nodes form a forest by parent content.
//
//	refs > 0            the worker holds the content, under refs engine ids
//	refs == 0           a ghost: kept only because it has children, so that
//	                    storing the content again re-attaches them
//	attached            the worker's bit is set in the shared entry (handle);
//	                    attached ⇔ refs > 0 and (pos == 0 or parent attached)
//
// The last rule keeps every worker's shared set prefix-closed, which is what
// lets the jump search skip positions exactly.
type node struct {
	seq      SeqHash
	local    LocalHash
	handle   arena.Handle // the shared entry, while attached
	pos      uint32
	parent   uint32 // node index + 1; 0 at position 0
	child    uint32 // first child, index + 1
	next     uint32 // siblings, index + 1
	prev     uint32
	refs     uint32
	attached bool
}

// workerState is the private state of one worker, owned by its lane.
type workerState struct {
	w       Worker
	slot    int
	ext     intMap // external hash → node index
	content intMap // sequence hash → node index
	nodes   []node
	free    []uint32
}

func (ln *lane) newWorker(w Worker, slot int) *workerState {
	ws := &workerState{w: w, slot: slot}
	ws.ext.init(ln.ix.k0, ln.ix.k1)
	ws.content.init(ln.ix.k1, ln.ix.k0)
	return ws
}

func (ws *workerState) newNode(n node) uint32 {
	if k := len(ws.free); k > 0 {
		i := ws.free[k-1]
		ws.free = ws.free[:k-1]
		ws.nodes[i] = n
		return i
	}
	ws.nodes = append(ws.nodes, n)
	return uint32(len(ws.nodes) - 1)
}

// store validates a Stored event whole, then applies it.
func (ln *lane) store(ev *Event) error {
	ix := ln.ix
	ws := ln.workers[ev.Worker]
	pos, prevSeq, parent := 0, SeqHash(0), uint32(0)
	if ev.HasParent {
		if ws == nil {
			return ErrUnknownParent
		}
		pi, ok := ws.ext.get(uint64(ev.Parent))
		if !ok {
			return ErrUnknownParent
		}
		p := &ws.nodes[pi]
		pos, prevSeq, parent = int(p.pos)+1, p.seq, pi+1
	}
	if pos+len(ev.Blocks) > ix.cfg.MaxDepth {
		return ErrTooDeep
	}
	if cap(ln.pending) < len(ev.Blocks) {
		ln.pending = make([]pendingBlock, len(ev.Blocks))
	}
	pending := ln.pending[:len(ev.Blocks)]
	checkBatch := len(ev.Blocks) > 16
	if checkBatch {
		ln.seen.reset()
	}
	for i, b := range ev.Blocks {
		seq := SeqHash(b.Local)
		if pos+i > 0 {
			seq = Chain(prevSeq, b.Local)
		}
		prevSeq = seq
		pending[i] = pendingBlock{seq: seq}
		if ws != nil {
			if ni, ok := ws.ext.get(uint64(b.Hash)); ok {
				n := &ws.nodes[ni]
				if int(n.pos) != pos+i || n.seq != seq {
					return ErrHashConflict
				}
				pending[i].dup = true
			}
			if ci, ok := ws.content.get(uint64(seq)); ok && int(ws.nodes[ci].pos) != pos+i {
				return ErrHashConflict // a sequence-hash collision across positions
			}
		}
		// The same engine id twice in one batch would sit at two positions.
		if checkBatch {
			if _, dup := ln.seen.get(uint64(b.Hash)); dup {
				return ErrHashConflict
			}
			ln.seen.put(uint64(b.Hash), 0)
		} else {
			for _, o := range ev.Blocks[:i] {
				if o.Hash == b.Hash {
					return ErrHashConflict
				}
			}
		}
	}
	if ws == nil {
		slot, err := ix.intern(ev.Worker)
		if err != nil {
			return err
		}
		ws = ln.newWorker(ev.Worker, slot)
		ln.workers[ev.Worker] = ws
	}
	stored := 0
	for i, b := range ev.Blocks {
		p := &pending[i]
		if p.dup {
			ni, _ := ws.ext.get(uint64(b.Hash))
			parent = ni + 1
			continue
		}
		ni, ok := ws.content.get(uint64(p.seq))
		if !ok {
			ni = ws.newNode(node{seq: p.seq, local: b.Local, pos: uint32(pos + i), parent: parent})
			if parent != 0 {
				pn := &ws.nodes[parent-1]
				ws.nodes[ni].next = pn.child
				if pn.child != 0 {
					ws.nodes[pn.child-1].prev = ni + 1
				}
				pn.child = ni + 1
			}
			ws.content.put(uint64(p.seq), ni)
		}
		ws.ext.put(uint64(b.Hash), ni)
		stored++
		n := &ws.nodes[ni]
		n.refs++
		if n.refs == 1 && (n.parent == 0 || ws.nodes[n.parent-1].attached) {
			ln.attachSubtree(ws, ni)
		}
		parent = ni + 1
	}
	ln.counters.Add(CounterBlocksStored, uint64(stored))
	ln.counters.Add(CounterBlocksDuplicate, uint64(len(ev.Blocks)-stored))
	ix.info[ws.slot].blocks.Store(int64(ws.ext.len()))
	return nil
}

// attachSubtree attaches node i and every held descendant reachable through
// held nodes.
func (ln *lane) attachSubtree(ws *workerState, i uint32) {
	st := append(ln.stack[:0], i)
	for len(st) > 0 {
		k := st[len(st)-1]
		st = st[:len(st)-1]
		n := &ws.nodes[k]
		n.handle = ln.ix.attach(ln.alloc, int(n.pos), n.local, n.seq, ws.slot)
		n.attached = true
		for c := n.child; c != 0; c = ws.nodes[c-1].next {
			if cn := &ws.nodes[c-1]; cn.refs > 0 && !cn.attached {
				st = append(st, c-1)
			}
		}
	}
	ln.stack = st
}

// detachSubtree detaches node i and every attached descendant.
func (ln *lane) detachSubtree(ws *workerState, i uint32) {
	st := append(ln.stack[:0], i)
	for len(st) > 0 {
		k := st[len(st)-1]
		st = st[:len(st)-1]
		n := &ws.nodes[k]
		if !n.attached {
			continue
		}
		ln.ix.detach(ln.alloc, int(n.pos), n.local, n.handle, ws.slot)
		n.attached, n.handle = false, 0
		for c := n.child; c != 0; c = ws.nodes[c-1].next {
			if ws.nodes[c-1].attached {
				st = append(st, c-1)
			}
		}
	}
	ln.stack = st
}

func (ln *lane) remove(ws *workerState, hashes []ExternalHash) {
	removed := 0
	for _, h := range hashes {
		ni, ok := ws.ext.get(uint64(h))
		if !ok {
			continue
		}
		ws.ext.del(uint64(h))
		removed++
		n := &ws.nodes[ni]
		n.refs--
		if n.refs > 0 {
			continue
		}
		if n.attached {
			ln.detachSubtree(ws, ni)
		}
		ws.collect(ni)
	}
	ln.counters.Add(CounterBlocksRemoved, uint64(removed))
	ln.counters.Add(CounterRemovesUnknown, uint64(len(hashes)-removed))
	ln.ix.info[ws.slot].blocks.Store(int64(ws.ext.len()))
}

// collect frees node i and then its ancestors while they are ghosts with no
// children left.
func (ws *workerState) collect(i uint32) {
	for {
		n := &ws.nodes[i]
		if n.refs > 0 || n.child != 0 {
			return
		}
		parent := n.parent
		if parent != 0 {
			pn := &ws.nodes[parent-1]
			if n.prev != 0 {
				ws.nodes[n.prev-1].next = n.next
			} else {
				pn.child = n.next
			}
			if n.next != 0 {
				ws.nodes[n.next-1].prev = n.prev
			}
		}
		ws.content.del(uint64(n.seq))
		*n = node{}
		ws.free = append(ws.free, i)
		if parent == 0 {
			return
		}
		i = parent - 1
	}
}

// clear drops everything the worker holds; it keeps its slot.
func (ln *lane) clear(ws *workerState) {
	for i := range ws.nodes {
		if n := &ws.nodes[i]; n.attached {
			ln.ix.detach(ln.alloc, int(n.pos), n.local, n.handle, ws.slot)
		}
	}
	ws.nodes, ws.free = ws.nodes[:0], ws.free[:0]
	ws.ext.reset()
	ws.content.reset()
	ln.ix.info[ws.slot].blocks.Store(0)
}
