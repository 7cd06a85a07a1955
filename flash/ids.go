package flash

import (
	"unsafe"

	"github.com/flashindexer/flashindexer/asm"
	"github.com/flashindexer/flashindexer/shardmap"
)

// idMap is a worker's map from engine ids to its nodes. It keeps no keys: a
// slot is a control byte (0 empty, else a tag of the id's keyed hash) and a
// value that names where the id is written:
//
//	v < idClaim            node v, whose ext is the id (the node's first)
//	v&idAlias != 0         aliases[v&^idAlias]: an id and its node, for a
//	                       second id of one content
//	v&idClaim != 0         block v&^idClaim of the batch being validated
//
// A probe compares the id only where the tag matches, and a hit reads the
// node it needs next anyway, so leaving the keys out costs a probe nothing
// and saves 8 bytes a slot: a slot is 5 bytes, a node 32. Linear probing
// with backward-shift deletion, as intMap.
type idMap struct {
	vals  []uint32
	ctrl  []uint8
	mask  uint64
	n     int
	hasZ  bool // id 0 lives outside the table
	zv    uint32
	floor int // the table never shrinks below this many slots
}

// The value's two top bits say what it names; a node index is below 2^30
// (a worker with that many nodes would hold 32 GiB of them).
const (
	idAlias = 1 << 31
	idClaim = 1 << 30
)

// aliasID is a second (third, …) engine id of one content; node is
// freeAlias while it is unused.
type aliasID struct {
	ext  ExternalHash
	node uint32
}

const freeAlias = ^uint32(0)

// maxHintKeys bounds the engine ids a capacity hint makes room for before
// any arrives, as maxHintChunks bounds its nodes: 2^20.
const maxHintKeys = 1 << 20

// alloc gives the map an empty table of c slots (a power of two, at least
// 8): values and control bytes in one pointer-free allocation.
func (m *idMap) alloc(c int) {
	mem := make([]uint32, c+c/4)
	m.vals = mem[:c:c]
	m.ctrl = unsafe.Slice((*uint8)(unsafe.Pointer(&mem[c])), c)
	m.mask = uint64(c - 1)
}

// idKey is the id that value v names.
func (ws *workerState) idKey(v uint32) uint64 {
	switch {
	case v&idAlias != 0:
		return uint64(ws.aliases[v&^idAlias].ext)
	case v&idClaim != 0:
		return uint64(ws.batch[v&^idClaim].Hash)
	}
	return uint64(ws.node(v).ext)
}

// idNode is the node that value v (not a claim) names.
func (ws *workerState) idNode(v uint32) uint32 {
	if v&idAlias != 0 {
		return ws.aliases[v&^idAlias].node
	}
	return v
}

func (ws *workerState) idHash(k uint64) uint64 { return shardmap.Hash(k, ws.k0, ws.k1) }

// idFind returns the slot of id k (not 0) and true, or the empty slot that
// ends its probe and false; and k's tag.
func (ws *workerState) idFind(k uint64) (uint64, uint8, bool) {
	m := &ws.ids
	h := ws.idHash(k)
	tag := tagOf(h)
	for i := h & m.mask; ; i = (i + 1) & m.mask {
		switch m.ctrl[i] {
		case 0:
			return i, tag, false
		case tag:
			if ws.idKey(m.vals[i]) == k {
				return i, tag, true
			}
		}
	}
}

// getID returns the node of id k.
func (ws *workerState) getID(k ExternalHash) (uint32, bool) {
	m := &ws.ids
	if k == 0 {
		return ws.idNode(m.zv), m.hasZ
	}
	if i, _, ok := ws.idFind(uint64(k)); ok {
		return ws.idNode(m.vals[i]), true
	}
	return 0, false
}

// claimID returns id k's slot and value when the worker has it; otherwise
// it inserts k as block i of the batch (ws.batch) and returns its slot.
// Slot -1 is id 0's place. The caller made room first (reserveIDs), so a
// claim never grows the table and a slot it returns stays k's until the
// next delete: inserts fill the empty slot that ends a probe and move
// nothing.
func (ws *workerState) claimID(k ExternalHash, i int) (slot int, v uint32, found bool) {
	m := &ws.ids
	if k == 0 {
		if m.hasZ {
			return -1, m.zv, true
		}
		m.hasZ, m.zv = true, idClaim|uint32(i)
		m.n++
		return -1, m.zv, false
	}
	s, tag, ok := ws.idFind(uint64(k))
	if ok {
		return int(s), m.vals[s], true
	}
	m.ctrl[s] = tag
	m.vals[s] = idClaim | uint32(i)
	m.n++
	return int(s), m.vals[s], false
}

// setID makes id k, claimed at slot, an id of node ni: the node's own when
// it has no id yet, else an alias.
func (ws *workerState) setID(slot int, k ExternalHash, ni uint32) {
	v := ni
	if n := ws.node(ni); n.refs() == 0 {
		n.ext = k
		n.st |= nodeOwnID
	} else {
		var j uint32
		if f := len(ws.freeAliases); f > 0 {
			j = ws.freeAliases[f-1]
			ws.freeAliases = ws.freeAliases[:f-1]
		} else {
			j = uint32(len(ws.aliases))
			ws.aliases = append(ws.aliases, aliasID{})
		}
		ws.aliases[j] = aliasID{ext: k, node: ni}
		v = idAlias | j
	}
	ws.setSlot(slot, v)
}

// setSlot sets the value of slot (from claimID).
func (ws *workerState) setSlot(slot int, v uint32) {
	if slot < 0 {
		ws.ids.zv = v
		return
	}
	ws.ids.vals[slot] = v
}

// addID adds id k, which the worker does not have, to node ni.
func (ws *workerState) addID(k ExternalHash, ni uint32) {
	ws.reserveIDs(1)
	m := &ws.ids
	m.n++
	if k == 0 {
		m.hasZ = true
		ws.setID(-1, k, ni)
		return
	}
	s, tag, _ := ws.idFind(uint64(k))
	m.ctrl[s] = tag
	ws.setID(int(s), k, ni)
}

// dropID removes id k and returns its node.
func (ws *workerState) dropID(k ExternalHash) (uint32, bool) {
	m := &ws.ids
	var v uint32
	if k == 0 {
		if !m.hasZ {
			return 0, false
		}
		m.hasZ, v = false, m.zv
		m.n--
	} else {
		i, _, ok := ws.idFind(uint64(k))
		if !ok {
			return 0, false
		}
		v = m.vals[i]
		ws.idDelete(i)
	}
	if v&idClaim != 0 {
		return 0, true // a claim given back
	}
	ni := ws.idNode(v)
	if v&idAlias != 0 {
		ws.aliases[v&^idAlias].node = freeAlias
		ws.freeAliases = append(ws.freeAliases, v&^idAlias)
		if len(ws.freeAliases) == len(ws.aliases) {
			ws.aliases, ws.freeAliases = ws.aliases[:0], ws.freeAliases[:0]
		}
	} else {
		ws.node(ni).st &^= nodeOwnID
	}
	return ni, true
}

// idDelete empties slot i, shifting later members of its cluster back.
func (ws *workerState) idDelete(i uint64) {
	m := &ws.ids
	m.n--
	for j := (i + 1) & m.mask; m.ctrl[j] != 0; j = (j + 1) & m.mask {
		home := ws.idHash(ws.idKey(m.vals[j])) & m.mask
		if (j-home)&m.mask >= (j-i)&m.mask {
			m.vals[i], m.ctrl[i] = m.vals[j], m.ctrl[j]
			i = j
		}
	}
	m.ctrl[i] = 0
	if c := len(m.ctrl); c > max(intMapShrinkAbove, m.floor) && m.n*16 < c && ws.batch == nil {
		ws.idGrow(max(c/4, m.floor))
	}
}

// reserveIDs grows the map, if needed, so that n more ids fit without
// growing.
func (ws *workerState) reserveIDs(n int) {
	if (ws.ids.n+n)*4 > len(ws.ids.ctrl)*3 {
		ws.idGrow(intMapCap(ws.ids.n + n))
	}
}

// idGrow moves the map to a table of c slots. It walks the nodes and the
// aliases in order, not the old table: the table names a node by index, so
// the old table's order would read the nodes' ids in random order, a cache
// miss each, where the nodes' order reads them as a stream. No block is
// claimed while it runs: claims are made after reserveIDs, and the map
// does not shrink while a batch holds claims.
func (ws *workerState) idGrow(c int) {
	m := &ws.ids
	m.alloc(c)
	for ci, chunk := range ws.chunks {
		base := uint32(ci) << nodeChunkBits
		for k := range chunk {
			if i := base + uint32(k); i < ws.n && chunk[k].st&nodeOwnID != 0 {
				ws.idPlace(uint64(chunk[k].ext), i)
			}
		}
	}
	for j, a := range ws.aliases {
		if a.node != freeAlias {
			ws.idPlace(uint64(a.ext), idAlias|uint32(j))
		}
	}
}

// idPlace puts value v of id k (not 0, absent) in the table.
func (ws *workerState) idPlace(k uint64, v uint32) {
	if k == 0 {
		return // id 0 lives outside the table
	}
	m := &ws.ids
	h := ws.idHash(k)
	j := h & m.mask
	for m.ctrl[j] != 0 {
		j = (j + 1) & m.mask
	}
	m.ctrl[j], m.vals[j] = tagOf(h), v
}

// resetIDs empties the map, keeping its memory when it is small.
func (ws *workerState) resetIDs() {
	m := &ws.ids
	m.n, m.hasZ = 0, false
	ws.aliases, ws.freeAliases = ws.aliases[:0], ws.freeAliases[:0]
	if len(m.ctrl) > max(intMapShrinkAbove, m.floor) {
		m.alloc(m.floor)
		return
	}
	clear(m.ctrl)
}

// eachID calls f with every id and its node.
func (ws *workerState) eachID(f func(k ExternalHash, node uint32)) {
	m := &ws.ids
	if m.hasZ {
		f(0, ws.idNode(m.zv))
	}
	for i, tag := range m.ctrl {
		if tag != 0 {
			f(ExternalHash(ws.idKey(m.vals[i])), ws.idNode(m.vals[i]))
		}
	}
}

// prefetchID asks the CPU for the control byte where id k is probed first.
func (ws *workerState) prefetchID(k ExternalHash) {
	i := uintptr(ws.idHash(uint64(k)) & ws.ids.mask)
	asm.Prefetch(uintptr(unsafe.Pointer(unsafe.SliceData(ws.ids.ctrl))) + i)
}
