package flash

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/zeebo/xxh3"
)

// Snapshot format, little-endian:
//
//	"FLASHSNP"  version u32  workers u32
//	per worker: id u64  rank u32  nodes u32
//	  per node, parents before children:
//	    parent u32 (index+1 in this worker's list, 0 at position 0)
//	    pos u32  seq u64  ids u32  ids × external hash u64
//	xxh3-64 of everything before it
//
// Version 1 also had each node's local hash (local u64 after seq), which
// the index no longer keeps; Restore still reads it, and checks that each
// sequence hash is its parent's chained with it.
//
// A node with no ids is a ghost (a removed block whose held descendants
// are kept for re-attachment); Restore rebuilds the worker's state from the
// nodes exactly, attachment included.
const (
	snapshotMagic   = "FLASHSNP"
	snapshotVersion = 2
)

// ErrSnapshot: a snapshot that is truncated, corrupted, of another version,
// or inconsistent (a node not one position past its parent, in version 1 a
// sequence hash that is not its parent's chain, a parent listed after its
// child, a block listed twice for one worker, an engine id on two blocks, a
// removed block kept with no descendant). The checksum
// only catches damage: every structural rule a worker's state obeys is
// checked on its own, so a snapshot made by hand is held to them too.
// Restore returns it and changes nothing.
var ErrSnapshot = errors.New("flash: bad snapshot")

type snapNode struct {
	parent uint32
	pos    uint32
	seq    SeqHash
	local  LocalHash // version 1 only
	ids    []ExternalHash
}

type snapWorker struct {
	w     Worker
	nodes []snapNode
}

// dumpWorker lists ws's nodes, parents first. The caller owns the lane.
func dumpWorker(ws *workerState) snapWorker {
	ids := map[uint32][]ExternalHash{}
	ws.eachID(func(k ExternalHash, v uint32) { ids[v] = append(ids[v], k) })
	var order []uint32
	for i := uint32(0); i < ws.n; i++ {
		if ws.node(i).live() {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b uint32) int { return int(ws.node(a).pos) - int(ws.node(b).pos) })
	index := make(map[uint32]uint32, len(order))
	sw := snapWorker{w: ws.w, nodes: make([]snapNode, len(order))}
	for k, i := range order {
		index[i] = uint32(k) + 1
		n := ws.node(i)
		sn := snapNode{pos: n.pos, seq: n.seq, ids: ids[i]}
		if n.parent != 0 {
			sn.parent = index[n.parent-1]
		}
		slices.Sort(sn.ids)
		sw.nodes[k] = sn
	}
	return sw
}

// Dump writes a snapshot of every worker, or of the listed ones, to w. Each
// worker is read on its own writer between two of its events, so each is
// consistent while writes continue; different workers may be captured at
// slightly different moments. It returns the number of engine ids written.
func (ix *Indexer) Dump(w io.Writer, workers ...Worker) (int, error) {
	want := map[Worker]bool{}
	for _, x := range workers {
		want[x] = true
	}
	var all []snapWorker
	for _, ln := range ix.lanes {
		ln.call(func() {
			for x, ws := range ln.workers {
				if len(want) == 0 || want[x] {
					all = append(all, dumpWorker(ws))
				}
			}
		})
	}
	slices.SortFunc(all, func(a, b snapWorker) int {
		if a.w.ID != b.w.ID {
			if a.w.ID < b.w.ID {
				return -1
			}
			return 1
		}
		return int(a.w.DPRank) - int(b.w.DPRank)
	})
	h := xxh3.New()
	bw := bufio.NewWriter(io.MultiWriter(w, h))
	var buf [8]byte
	u32 := func(v uint32) { binary.LittleEndian.PutUint32(buf[:4], v); bw.Write(buf[:4]) }
	u64 := func(v uint64) { binary.LittleEndian.PutUint64(buf[:], v); bw.Write(buf[:]) }
	bw.WriteString(snapshotMagic)
	u32(snapshotVersion)
	u32(uint32(len(all)))
	ids := 0
	for _, sw := range all {
		u64(sw.w.ID)
		u32(sw.w.DPRank)
		u32(uint32(len(sw.nodes)))
		for _, n := range sw.nodes {
			u32(n.parent)
			u32(n.pos)
			u64(uint64(n.seq))
			u32(uint32(len(n.ids)))
			for _, id := range n.ids {
				u64(uint64(id))
			}
			ids += len(n.ids)
		}
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	binary.LittleEndian.PutUint64(buf[:], h.Sum64())
	_, err := w.Write(buf[:])
	return ids, err
}

// readSnapshot parses and checks a whole snapshot.
func readSnapshot(r io.Reader, maxDepth int) ([]snapWorker, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	bad := func(f string, a ...any) error { return fmt.Errorf("%w: "+f, append([]any{ErrSnapshot}, a...)...) }
	if len(data) < len(snapshotMagic)+8+8 || string(data[:len(snapshotMagic)]) != snapshotMagic {
		return nil, bad("no snapshot header")
	}
	body, sum := data[:len(data)-8], binary.LittleEndian.Uint64(data[len(data)-8:])
	if xxh3.Hash(body) != sum {
		return nil, bad("checksum mismatch (truncated or corrupted)")
	}
	p := body[len(snapshotMagic):]
	short := false
	u32 := func() uint32 {
		if len(p) < 4 {
			short = true
			return 0
		}
		v := binary.LittleEndian.Uint32(p)
		p = p[4:]
		return v
	}
	u64 := func() uint64 {
		if len(p) < 8 {
			short = true
			return 0
		}
		v := binary.LittleEndian.Uint64(p)
		p = p[8:]
		return v
	}
	version := u32()
	if version != 1 && version != snapshotVersion {
		return nil, bad("version %d, this build reads 1 and %d", version, snapshotVersion)
	}
	v1 := version == 1
	nw := u32()
	var out []snapWorker
	seen := map[Worker]bool{}
	for i := uint32(0); i < nw && !short; i++ {
		sw := snapWorker{w: Worker{ID: u64(), DPRank: u32()}}
		if seen[sw.w] {
			return nil, bad("worker %v twice", sw.w)
		}
		seen[sw.w] = true
		nn := u32()
		if uint64(nn)*24 > uint64(len(p)) {
			return nil, bad("worker %v: %d nodes in %d bytes", sw.w, nn, len(p))
		}
		ids := map[ExternalHash]bool{}
		blocks := map[[2]uint64]bool{} // (position, sequence hash): one node each
		for k := uint32(0); k < nn && !short; k++ {
			n := snapNode{parent: u32(), pos: u32(), seq: SeqHash(u64())}
			if v1 {
				n.local = LocalHash(u64())
			}
			ni := u32()
			if uint64(ni)*8 > uint64(len(p)) {
				return nil, bad("worker %v: %d ids in %d bytes", sw.w, ni, len(p))
			}
			for j := uint32(0); j < ni; j++ {
				id := ExternalHash(u64())
				if ids[id] {
					return nil, bad("worker %v: engine id %x twice", sw.w, id)
				}
				ids[id] = true
				n.ids = append(n.ids, id)
			}
			// Parents come first, one position up, and the sequence hash
			// is the chain of the parent's.
			switch {
			case int(n.pos) >= maxDepth:
				return nil, bad("position %d past the maximum depth", n.pos)
			case n.parent == 0 && (n.pos != 0 || v1 && n.seq != SeqHash(n.local)):
				return nil, bad("worker %v: root node at %d", sw.w, n.pos)
			case n.parent > k:
				return nil, bad("worker %v: node %d before its parent", sw.w, k)
			case n.parent != 0:
				par := sw.nodes[n.parent-1]
				if par.pos+1 != n.pos || v1 && Chain(par.seq, n.local) != n.seq {
					return nil, bad("worker %v: node %d does not extend its parent", sw.w, k)
				}
			}
			key := [2]uint64{uint64(n.pos), uint64(n.seq)}
			if blocks[key] {
				return nil, bad("worker %v: node %d repeats the block at %d (sequence hash %x)", sw.w, k, n.pos, n.seq)
			}
			blocks[key] = true
			sw.nodes = append(sw.nodes, n)
		}
		// A node held by no engine id is kept only for its children.
		children := make([]int, len(sw.nodes)+1)
		for _, n := range sw.nodes {
			children[n.parent]++
		}
		for k, n := range sw.nodes {
			if len(n.ids) == 0 && children[k+1] == 0 {
				return nil, bad("worker %v: node %d is held by nothing", sw.w, k)
			}
		}
		out = append(out, sw)
	}
	if short || len(p) != 0 {
		return nil, bad("length does not match its contents")
	}
	return out, nil
}

// Restore loads a snapshot written by Dump. Every worker in it gets exactly
// the state it had in the snapshot (replacing what the index held for it);
// other workers are untouched. A truncated, corrupted or inconsistent
// snapshot returns an error wrapping ErrSnapshot and changes nothing; so
// does one with more new workers than free slots (ErrTooManyWorkers). On a
// closed index it returns ErrClosed and changes nothing; when Close lands
// while Restore runs, Restore returns ErrClosed and only the lanes it
// reached before Close (if any) hold their restored workers.
func (ix *Indexer) Restore(r io.Reader) error {
	if ix.closed.Load() {
		return ErrClosed
	}
	sws, err := readSnapshot(r, ix.cfg.MaxDepth)
	if err != nil {
		return err
	}
	ix.workersMu.Lock()
	dir := *ix.directory.Load()
	newWorkers := 0
	for _, sw := range sws {
		if _, ok := dir[sw.w]; !ok {
			newWorkers++
		}
	}
	free := ix.cfg.MaxWorkers - ix.slots.Used()
	ix.workersMu.Unlock()
	if newWorkers > free {
		return ErrTooManyWorkers
	}
	byLane := map[*lane][]snapWorker{}
	for _, sw := range sws {
		ln := ix.laneOf(sw.w.ID)
		byLane[ln] = append(byLane[ln], sw)
	}
	var firstErr error
	for ln, list := range byLane {
		err := ln.callOpen(func() {
			for _, sw := range list {
				if err := ln.restoreWorker(sw); err != nil && firstErr == nil {
					firstErr = err
				}
			}
		})
		if err != nil {
			return err
		}
	}
	return firstErr
}

// restoreWorker replaces one worker's state. The caller owns the lane.
func (ln *lane) restoreWorker(sw snapWorker) error {
	ws := ln.workers[sw.w]
	if ws == nil {
		slot, err := ln.ix.intern(sw.w)
		if err != nil {
			return err
		}
		ws = ln.newWorker(sw.w, slot)
		ln.workers[sw.w] = ws
	} else {
		ln.clear(ws)
	}
	complex := false
	idx := make([]uint32, len(sw.nodes))
	for k, sn := range sw.nodes {
		parent := uint32(0)
		if sn.parent != 0 {
			parent = idx[sn.parent-1] + 1
		}
		i := ws.newNode(node{seq: sn.seq, pos: sn.pos, parent: parent})
		idx[k] = i
		for _, id := range sn.ids {
			ws.addID(id, i)
			ws.node(i).st++
		}
		if len(sn.ids) != 1 {
			complex = true // a ghost, or several engine ids for one content
		}
	}
	if complex {
		ln.makeComplex(ws)
	}
	for _, i := range idx { // parents first
		n := ws.node(i)
		if n.refs() > 0 && (n.parent == 0 || ws.node(n.parent-1).attached()) {
			ln.attach(int(n.pos), n.seq, ws.slot)
			n.setAttached(true)
		}
	}
	ln.ix.info[ws.slot].blocks.Store(int64(ws.ids.n))
	if invariants {
		ln.checkWorker(ws)
	}
	return nil
}
