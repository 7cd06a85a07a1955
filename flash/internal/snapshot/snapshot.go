package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/flashindexer/flashindexer/internal/chain"
	"github.com/zeebo/xxh3"
)

// Snapshot format, little-endian:
//
//	"FLASHSNP"  version u32  workers u32
//	per worker: id u64  rank u32  nodes u32
//	  per node, parents before children:
//	    parent u32 (index+1 in this worker's list, 0 at position 0)
//	    pos u32  seq u64  ids u32  ids × (external hash u64  tiers u8)
//	xxh3-64 of everything before it
//
// An id's tiers are the tiers that hold it, a bit each (bit 0 the
// fastest): never none, none past the index's tiers. Version 2 had no
// tiers byte: each id is read as held in the fastest tier. Version 1 also
// had each node's local hash (local u64 after seq), which the index no
// longer keeps; Restore still reads it, and checks that each sequence hash
// is its parent's chained with it.
//
// A node with no ids is a ghost (a removed block whose held descendants
// are kept for re-attachment); Restore rebuilds the worker's state from the
// nodes exactly, attachment included.
const (
	Magic   = "FLASHSNP"
	Version = 3
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

// Node is one node of a worker's state: its parent (index + 1 in the
// worker's list, 0 at position 0), position, sequence hash, and the engine
// ids that hold it (none: a ghost), with the tiers holding each (Tiers[k]
// for IDs[k]; nil: the fastest alone).
type Node struct {
	Parent uint32
	Pos    uint32
	Seq    uint64
	Local  uint64 // version 1 only
	IDs    []uint64
	Tiers  []uint8
}

// TiersOf returns the tiers of the node's k-th id.
func (n *Node) TiersOf(k int) uint8 {
	if n.Tiers == nil {
		return 1
	}
	return n.Tiers[k]
}

// Worker is one worker's state: its identity and its nodes, parents first.
type Worker struct {
	ID    uint64
	Rank  uint32
	Nodes []Node
}

// Write writes all (sorted by the caller) to w and returns the number of
// engine ids written.
func Write(w io.Writer, all []Worker) (int, error) {
	h := xxh3.New()
	bw := bufio.NewWriter(io.MultiWriter(w, h))
	var buf [8]byte
	u32 := func(v uint32) { binary.LittleEndian.PutUint32(buf[:4], v); bw.Write(buf[:4]) }
	u64 := func(v uint64) { binary.LittleEndian.PutUint64(buf[:], v); bw.Write(buf[:]) }
	bw.WriteString(Magic)
	u32(Version)
	u32(uint32(len(all)))
	ids := 0
	for _, sw := range all {
		u64(sw.ID)
		u32(sw.Rank)
		u32(uint32(len(sw.Nodes)))
		for _, n := range sw.Nodes {
			u32(n.Parent)
			u32(n.Pos)
			u64(uint64(n.Seq))
			u32(uint32(len(n.IDs)))
			for k, id := range n.IDs {
				u64(uint64(id))
				bw.WriteByte(n.TiersOf(k))
			}
			ids += len(n.IDs)
		}
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	binary.LittleEndian.PutUint64(buf[:], h.Sum64())
	_, err := w.Write(buf[:])
	return ids, err
}

// nodeBytes is the least a node takes: parent, position, sequence hash and
// the count of its ids, which is 0 for a removed block kept for its
// children; version 1 adds the local hash.
func nodeBytes(v1 bool) uint64 {
	if v1 {
		return 4 + 4 + 8 + 8 + 4
	}
	return 4 + 4 + 8 + 4
}

// Read parses and checks a whole snapshot for an index of that many tiers.
func Read(r io.Reader, maxDepth, tiers int) ([]Worker, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	bad := func(f string, a ...any) error { return fmt.Errorf("%w: "+f, append([]any{ErrSnapshot}, a...)...) }
	if len(data) < len(Magic)+8+8 || string(data[:len(Magic)]) != Magic {
		return nil, bad("no snapshot header")
	}
	body, sum := data[:len(data)-8], binary.LittleEndian.Uint64(data[len(data)-8:])
	if xxh3.Hash(body) != sum {
		return nil, bad("checksum mismatch (truncated or corrupted)")
	}
	p := body[len(Magic):]
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
	if version < 1 || version > Version {
		return nil, bad("version %d, this build reads 1 to %d", version, Version)
	}
	v1, idBytes := version == 1, uint64(8)
	if version >= 3 {
		idBytes = 9
	}
	nw := u32()
	var out []Worker
	seen := map[[2]uint64]bool{}
	for i := uint32(0); i < nw && !short; i++ {
		sw := Worker{ID: u64(), Rank: u32()}
		if seen[[2]uint64{sw.ID, uint64(sw.Rank)}] {
			return nil, bad("worker %d rank %d twice", sw.ID, sw.Rank)
		}
		seen[[2]uint64{sw.ID, uint64(sw.Rank)}] = true
		nn := u32()
		if uint64(nn)*nodeBytes(v1) > uint64(len(p)) {
			return nil, bad("worker %d: %d nodes in %d bytes", sw.ID, nn, len(p))
		}
		ids := map[uint64]bool{}
		blocks := map[[2]uint64]bool{} // (position, sequence hash): one node each
		for k := uint32(0); k < nn && !short; k++ {
			n := Node{Parent: u32(), Pos: u32(), Seq: u64()}
			if v1 {
				n.Local = u64()
			}
			ni := u32()
			if uint64(ni)*idBytes > uint64(len(p)) {
				return nil, bad("worker %d: %d ids in %d bytes", sw.ID, ni, len(p))
			}
			for j := uint32(0); j < ni; j++ {
				id := uint64(u64())
				if ids[id] {
					return nil, bad("worker %d: engine id %x twice", sw.ID, id)
				}
				ids[id] = true
				n.IDs = append(n.IDs, id)
				if idBytes == 9 {
					if len(p) == 0 {
						short = true
						break
					}
					t := p[0]
					p = p[1:]
					if t == 0 || tiers < 8 && t>>tiers != 0 {
						return nil, bad("worker %d: engine id %x in tiers %#x, the index has %d", sw.ID, id, t, tiers)
					}
					n.Tiers = append(n.Tiers, t)
				}
			}
			// Parents come first, one position up, and the sequence hash
			// is the chain of the parent's.
			switch {
			case int(n.Pos) >= maxDepth:
				return nil, bad("position %d past the maximum depth", n.Pos)
			case n.Parent == 0 && (n.Pos != 0 || v1 && n.Seq != n.Local):
				return nil, bad("worker %d: root node at %d", sw.ID, n.Pos)
			case n.Parent > k:
				return nil, bad("worker %d: node %d before its parent", sw.ID, k)
			case n.Parent != 0:
				par := sw.Nodes[n.Parent-1]
				if par.Pos+1 != n.Pos || v1 && chain.Chain(par.Seq, n.Local) != n.Seq {
					return nil, bad("worker %d: node %d does not extend its parent", sw.ID, k)
				}
			}
			key := [2]uint64{uint64(n.Pos), uint64(n.Seq)}
			if blocks[key] {
				return nil, bad("worker %d: node %d repeats the block at %d (sequence hash %x)", sw.ID, k, n.Pos, n.Seq)
			}
			blocks[key] = true
			sw.Nodes = append(sw.Nodes, n)
		}
		// A node held by no engine id is kept only for its children.
		children := make([]int, len(sw.Nodes)+1)
		for _, n := range sw.Nodes {
			children[n.Parent]++
		}
		for k, n := range sw.Nodes {
			if len(n.IDs) == 0 && children[k+1] == 0 {
				return nil, bad("worker %d: node %d is held by nothing", sw.ID, k)
			}
		}
		out = append(out, sw)
	}
	if short || len(p) != 0 {
		return nil, bad("length does not match its contents")
	}
	return out, nil
}
