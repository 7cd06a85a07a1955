package worker

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/keyhash"
)

// idMap is a worker's map from engine ids to its nodes. It keeps no keys: a
// slot is a tag (0 empty, else the top byte of the id's keyed hash) and a value
// that names where the id is written:
//
//	v < idClaim            node v, whose ext is the id (the node's first)
//	v&idAlias != 0         aliases[v&^idAlias]: an id and its node, for a
//	                       second id of one content
//	v&idClaim != 0         block v&^idClaim of the batch being validated
//
// A probe compares the id only where the tag matches, and a hit reads the
// node it needs next anyway, so leaving the keys out costs a probe nothing
// and saves 8 bytes a slot.
//
// Slots come in buckets of 12, one cache line each: 12 tags, an overflow
// count and 12 values. An id goes in the first bucket from its home (the
// hash's low bits) with a free slot, and each full bucket it passes counts
// one more overflow; a lookup stops at the first bucket with no overflow.
// So inserting a new id (every stored block) touches one line where tags
// and values kept apart would touch two, and a delete only clears a tag and
// takes back its overflow counts: nothing moves, and there are no
// tombstones. An overflow count that reaches 255 stays (a lookup then walks
// on, which stays correct).
type idMap struct {
	b     []idBucket
	bmask uint64 // buckets - 1
	n     int
	hasZ  bool // id 0 lives outside the table
	zv    uint32
	floor int // the table never shrinks below this many buckets
	quad  int // a table of fewer buckets grows 4× (idQuadrupleBelow)
}

const idBucketSlots = 12

type idBucket struct {
	// The slots' tags, a byte each. Matching reads them as two words
	// (lo, hi), slot j's tag the word's byte j from the low end; a slot's
	// tag is written as a byte.
	tags [idBucketSlots]uint8
	over uint8 // ids placed past this bucket, which was full on their probe
	_    [3]uint8
	vals [idBucketSlots]uint32
}

// lo is slots 0–7's tags, slot j's in bits 8j…8j+7; hi is slots 8–11's, so,
// in its low four bytes.
func (bk *idBucket) lo() uint64 { return binary.LittleEndian.Uint64(bk.tags[:8]) }
func (bk *idBucket) hi() uint64 {
	return uint64(binary.LittleEndian.Uint32(bk.tags[8:idBucketSlots]))
}

// tag returns slot j's tag.
func (bk *idBucket) tag(j int) uint8 { return bk.tags[j] }

// setTag sets slot j's tag to t.
func (bk *idBucket) setTag(j int, t uint8) { bk.tags[j] = t }

// put gives slot j, which is free (its tag 0), an id of tag t, valued v.
func (bk *idBucket) put(j int, t uint8, v uint32) {
	bk.tags[j] = t
	bk.vals[j] = v
}

// match returns a set of the slots whose tag is t: slot j < 8 is bit 8j,
// slot 8+j bit 8j+1 (hi's four bytes), so the set comes from the
// bytes' zero tests with two shifts. slotOf names a member; the order of
// the bits is not the slots' (slot 8 is bit 1).
func (bk *idBucket) match(t uint8) uint64 {
	p := tagSpread * uint64(t)
	return zeroBytes(bk.lo()^p)>>7 | zeroBytes(bk.hi()^p)&hiBytes>>6
}

// has reports whether a slot's tag is t, in fewer instructions than match:
// lowZeroByte is exact for whether a word has a 0 byte. Above its four
// tags, hi's word is 0, so t's bytes (not 0) there.
func (bk *idBucket) has(t uint8) bool {
	p := tagSpread * uint64(t)
	return lowZeroByte(bk.lo()^p)|lowZeroByte(bk.hi()^p) != 0
}

// firstOf returns the first slot whose tag is t (not 0), or at least
// idBucketSlots when none is: lowZeroByte's lowest byte is exact, and
// above hi's four tags t's bytes are not 0.
func (bk *idBucket) firstOf(t uint8) int {
	p := tagSpread * uint64(t)
	if lo := lowZeroByte(bk.lo() ^ p); lo != 0 {
		return bits.TrailingZeros64(lo) >> 3
	}
	return 8 + bits.TrailingZeros64(lowZeroByte(bk.hi()^p))>>3
}

// tagSpread times a tag puts it in every byte of a word: a bucket's tag
// bytes are compared with it all at once (here and in prepare_amd64.s).
const tagSpread = 0x0101_0101_0101_0101

// slotOf is the slot of the lowest bit of a set that match returned (not
// empty).
func slotOf(c uint64) int {
	z := bits.TrailingZeros64(c)
	return z>>3 | (z&1)<<3
}

// firstFree returns the bucket's first free slot, or idBucketSlots when
// it is full.
func (bk *idBucket) firstFree() int {
	if lo := lowZeroByte(bk.lo()); lo != 0 {
		return bits.TrailingZeros64(lo) >> 3
	}
	// hi's word has four more bytes, all 0: a full bucket gives 8+4.
	return 8 + bits.TrailingZeros64(lowZeroByte(bk.hi()))>>3
}

// lowZeroByte returns a word whose lowest set bit is the top bit of x's
// lowest byte that is 0 (and 0 when none is): in fewer instructions than
// zeroBytes, which is exact for every byte. Subtracting 1 from each byte
// borrows first at the lowest 0 byte; a byte above it may be set too.
func lowZeroByte(x uint64) uint64 {
	return (x - tagSpread) &^ x & 0x8080_8080_8080_8080
}

// hiBytes: the top bits of the four bytes that hi's tags fill.
const hiBytes = 0x8080_8080

// An id's slot is named by its bucket and its index in it, b<<4 | j.
const idSlotBits = 4

// idSlot names an id's value word: the table's uint32 word that it is,
// b<<idSlotBits | (idValsWord+j) for slot j of bucket b, or id 0's
// (idZSlot). Unlike a pointer, a claim's word named so is stored with no
// write barrier, and found from the table's address with one add. 32 bits
// name 2^28 buckets, more than a worker's 2^30 nodes fill.
type idSlot uint32

const idZSlot = ^idSlot(0)

// idValsWord is the index of a bucket's first value word.
const idValsWord = int(unsafe.Offsetof(idBucket{}.vals) / 4)

// slotWord is the idSlot of slot s (b<<idSlotBits | j).
func slotWord(s int) idSlot { return idSlot(s + idValsWord) }

// idBucketFill: a bucket table grows when its ids would pass 10 of 12
// slots a bucket on average (83%); a probe then still ends in the home
// bucket nearly always.
const idBucketFill = 10

// The value's two top bits say what it names; a node index is below 2^30
// (a worker with that many nodes would hold 32 GiB of them).
const (
	idAlias = 1 << 31
	idClaim = 1 << 30
)

// aliasID is a second (third, …) engine id of one content; node is
// freeAlias while it is unused.
type aliasID struct {
	ext   uint64
	node  uint32
	tiers uint8 // the tiers holding it, with several (tiers.go)
}

const freeAlias = ^uint32(0)

// maxHintKeys bounds the engine ids a capacity hint makes room for before
// any arrives, as maxHintChunks bounds its nodes: 2^20.
const maxHintKeys = 1 << 20

// idBuckets is the number of buckets (a power of two) that holds n ids.
func idBuckets(n int) int {
	c := 1
	for c*idBucketFill < n {
		c *= 2
	}
	return c
}

// alloc gives the map an empty table of c buckets (a power of two): one
// pointer-free allocation of whole lines (Go places power-of-two sizes on
// their own alignment, so a bucket never straddles two lines).
func (m *idMap) alloc(c int) {
	m.b = make([]idBucket, c)
	m.bmask = uint64(c - 1)
}

// slots is the table's capacity.
func (m *idMap) slots() int { return len(m.b) * idBucketSlots }

// at returns the value of slot s.
func (m *idMap) at(s int) *uint32 { return &m.b[s>>idSlotBits].vals[s&(1<<idSlotBits-1)] }

// word returns the value word that s names.
func (m *idMap) word(s idSlot) *uint32 {
	if s == idZSlot {
		return &m.zv
	}
	return &m.b[s>>idSlotBits].vals[int(s&(1<<idSlotBits-1))-idValsWord]
}

// idWord is word of a map whose table is at base and whose id 0's word
// is zv, with no bounds check: for s that a claim of the current batch
// returned.
func idWord(base unsafe.Pointer, zv *uint32, s idSlot) *uint32 {
	if s == idZSlot {
		return zv
	}
	return (*uint32)(unsafe.Add(base, uintptr(s)*4))
}

// idTag is an id's tag: the top byte of its hash, 1 for 0 (0 marks a free
// slot). Of 255 values, not contentMap's 128: a probe for a new id, the most
// common one, then reads a node for a false match half as often.
func idTag(h uint64) uint8 {
	t := h >> 56
	return uint8(t | (t-1)>>63) // t-1 has its top bit only when t is 0
}

// zeroBytes returns x with the top bit of each byte that is 0 set, and
// every other bit clear: exact, no carries between bytes.
func zeroBytes(x uint64) uint64 {
	const lo7 = 0x7F7F_7F7F_7F7F_7F7F
	return ^((x&lo7 + lo7) | x | lo7)
}

// idKey is the id that value v names.
func (ws *State) idKey(v uint32) uint64 {
	switch {
	case v&idAlias != 0:
		return uint64(ws.aliases[v&^idAlias].ext)
	case v&idClaim != 0:
		return uint64(ws.batch[v&^idClaim].Hash)
	}
	return uint64(ws.node(v).ext)
}

// idNode is the node that value v (not a claim) names.
func (ws *State) idNode(v uint32) uint32 {
	if v&idAlias != 0 {
		return ws.aliases[v&^idAlias].node
	}
	return v
}

func (ws *State) idHash(k uint64) uint64 { return keyhash.Hash(k, ws.k0, ws.k1) }

// idFind returns the slot of id k (not 0) and true, or false; and k's hash.
func (ws *State) idFind(k uint64) (s int, ok bool, h uint64) {
	h = ws.idHash(k)
	s, ok = ws.idFindHashed(k, h)
	return s, ok, h
}

// idFindHashed is idFind of k, whose hash is h.
func (ws *State) idFindHashed(k, h uint64) (s int, ok bool) {
	m := &ws.ids
	tag := idTag(h)
	for b := h & m.bmask; ; b = (b + 1) & m.bmask {
		bk := &m.b[b]
		for c := bk.match(tag); c != 0; c &= c - 1 {
			j := slotOf(c)
			if ws.idKey(bk.vals[j]) == k {
				return int(b)<<idSlotBits | j, true
			}
		}
		if bk.over == 0 {
			return 0, false
		}
	}
}

// idInsert puts value v of an absent id (not 0) of hash h in the first
// free slot of its probe, counts an overflow in each full bucket it passes,
// and returns the slot. The table has a free slot.
func (ws *State) idInsert(h uint64, v uint32) int {
	m := &ws.ids
	for b := h & m.bmask; ; b = (b + 1) & m.bmask {
		bk := &m.b[b]
		if j := bk.firstFree(); j < idBucketSlots {
			bk.put(j, idTag(h), v)
			return int(b)<<idSlotBits | j
		}
		if bk.over != 255 {
			bk.over++
		}
	}
}

// filled returns the slots in use of a bucket that has only had inserts:
// they are its first ones, each tag a byte not 0. It is free's lowest bit
// for such a bucket, in a few instructions: a table's rebuild (idGrow)
// places every id again.
func (bk *idBucket) filled() int {
	if bk.tags[7] == 0 {
		return (bits.Len64(bk.lo()) + 7) >> 3
	}
	return 8 + (bits.Len64(bk.hi())+7)>>3
}

// idPlace is idInsert into a table that has had no deletes (idGrow's
// new one): the same slot, found by counting.
func (ws *State) idPlace(h uint64, v uint32) {
	m := &ws.ids
	for b := h & m.bmask; ; b = (b + 1) & m.bmask {
		bk := &m.b[b]
		if j := bk.filled(); j < idBucketSlots {
			bk.put(j, idTag(h), v)
			return
		}
		if bk.over != 255 {
			bk.over++
		}
	}
}

// getID returns the node of id k.
func (ws *State) getID(k uint64) (uint32, bool) {
	v, ok := ws.idValue(k)
	return ws.idNode(v), ok
}

// idValue returns id k's value in the map: its node, or idAlias and its
// alias.
func (ws *State) idValue(k uint64) (uint32, bool) {
	m := &ws.ids
	if k == 0 {
		return m.zv, m.hasZ
	}
	if s, ok, _ := ws.idFind(uint64(k)); ok {
		return *m.at(s), true
	}
	return 0, false
}

// claimID returns id k's slot (naming its value's word) and value when
// the worker has it; otherwise it inserts k (of hash h) as block i of the
// batch (ws.batch) and returns its slot. The caller made room first
// (reserveIDs), so a claim never grows the table and a slot it returns
// stays k's until the next delete: nothing in the table moves.
func (ws *State) claimID(k, h uint64, i int) (slot idSlot, v uint32, found bool) {
	m := &ws.ids
	if k == 0 {
		if m.hasZ {
			return idZSlot, m.zv, true
		}
		m.hasZ, m.zv = true, idClaim|uint32(i)
		m.n++
		return idZSlot, m.zv, false
	}
	// The home bucket first, here: nearly every probe ends in it.
	home := h & m.bmask
	bk := &m.b[home]
	tag := idTag(h)
	for c := bk.match(tag); c != 0; c &= c - 1 {
		if j := slotOf(c); ws.idKey(bk.vals[j]) == k {
			return slotWord(int(home)<<idSlotBits | j), bk.vals[j], true
		}
	}
	if bk.over != 0 {
		if s, ok := ws.idFindHashed(k, h); ok {
			return slotWord(s), *m.at(s), true
		}
	}
	m.n++
	v = idClaim | uint32(i)
	if bk.over == 0 {
		if j := bk.firstFree(); j < idBucketSlots {
			// The probe showed where k goes: no second one.
			bk.put(j, tag, v)
			return slotWord(int(home)<<idSlotBits | j), v, false
		}
	}
	return slotWord(ws.idInsert(h, v)), v, false
}

// claimAll claims the engine id of each of blocks (ws.batch) in order,
// whose hashes pending holds (idh), as claimID does: a new id's slot goes
// in its block's slot, and a block whose id the worker has is a dup, with
// its node in node. The common claims and dups are claimNew's; the
// others, here, call claimID. A dup is checked where it is found: its id
// must name the node of the block's content, the key at position pos+i
// (keys[i].K), and not a block the batch claimed before (the same id
// twice). claimAll stops at the first that does not and returns false,
// with the claims it made given back.
func (ws *State) claimAll(blocks []Block, pending []pendingBlock, keys []keyhash.Key, pos int) bool {
	pending, keys = pending[:len(blocks)], keys[:len(blocks)]
	for i := 0; ; i++ {
		if i = ws.claimNew(blocks, pending, keys, pos, i); i == len(blocks) {
			return true
		}
		p := &pending[i]
		slot, v, found := ws.claimID(blocks[i].Hash, p.idh, i)
		p.slot, p.held = slot, 0
		if found {
			ni := ws.idNode(v)
			if v&idClaim != 0 || ws.node(ni).pos != uint32(pos+i) || ws.node(ni).seq != keys[i].K {
				ws.unclaim(blocks[:i], pending[:i])
				return false
			}
			p.held = ni + 1
		}
	}
}

// claimNew makes claimAll's common claims, from block i on: a new id whose
// home bucket has room and no other id of its tag, which claimID would put
// in that bucket's first free slot, as claimNew does; and a dup whose id
// is the first of its tag in its home bucket and its node's own, the most
// common dup (the prefix of a prompt the worker holds, sent again in
// full), checked as claimAll checks one. It returns the index of the
// first block whose claim is neither (len(blocks) when none is).
// Its loop (claimRun's) calls nothing: a call (claimID's) in it cost the
// loop its registers, spilled and reloaded around it.
func (ws *State) claimNew(blocks []Block, pending []pendingBlock, keys []keyhash.Key, pos, i int) int {
	m := &ws.ids
	n, dups := claimRun(unsafe.Pointer(unsafe.SliceData(m.b)), m.bmask, blocks, pending[:len(blocks)], keys[:len(blocks)], ws.chunks, pos, i)
	m.n += n - i - dups
	return n
}

// claimRunGo is claimNew's loop over a table of buckets from base, bmask
// the buckets less one, with pending and keys as long as blocks and the
// nodes in chunks; it returns where it stopped, and how many of the
// blocks before were dups.
func claimRunGo(base unsafe.Pointer, bmask uint64, blocks []Block, pending []pendingBlock, keys []keyhash.Key, chunks []*chunk, pos, i int) (int, int) {
	// The table's fields in registers: Go reloads a field after any store.
	// A bucket is found from the table's address, as idAddr finds it:
	// bmask is the buckets less one, so no bounds check is needed (nor the
	// register).
	pending, keys = pending[:len(blocks)], keys[:len(blocks)]
	dups := 0
	for ; i < len(blocks); i++ {
		h, k := pending[i].idh, blocks[i].Hash
		bk := (*idBucket)(unsafe.Add(base, (h&bmask)*uint64(unsafe.Sizeof(idBucket{}))))
		tag := idTag(h)
		if k == 0 {
			break
		}
		if j := bk.firstOf(tag); j < idBucketSlots {
			v := bk.vals[j]
			if v&(idAlias|idClaim) != 0 {
				break
			}
			n := &chunks[v>>nodeChunkBits][v&(1<<nodeChunkBits-1)]
			if n.ext != k || n.pos != uint32(pos+i) || n.seq != keys[i].K {
				break
			}
			pending[i].slot, pending[i].held = slotWord(int(h&bmask)<<idSlotBits|j), v+1
			dups++
			continue
		}
		j := bk.firstFree()
		if bk.over != 0 || j >= idBucketSlots {
			break
		}
		bk.put(j, tag, idClaim|uint32(i))
		pending[i].slot, pending[i].held = slotWord(int(h&bmask)<<idSlotBits|j), 0
	}
	return i, dups
}

// setID makes id k, claimed at slot, an id of node ni: the node's own when
// it has no id yet, else an alias.
func (ws *State) setID(slot *uint32, k uint64, ni uint32) {
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
	*slot = v
}

// addID adds id k, which the worker does not have, to node ni.
func (ws *State) addID(k uint64, ni uint32) {
	ws.reserveIDs(1)
	m := &ws.ids
	m.n++
	if k == 0 {
		m.hasZ = true
		ws.setID(&m.zv, k, ni)
		return
	}
	ws.setID(m.at(ws.idInsert(ws.idHash(uint64(k)), 0)), k, ni)
}

// dropID removes id k and returns its node.
func (ws *State) dropID(k uint64) (uint32, bool) {
	m := &ws.ids
	var v uint32
	if k == 0 {
		if !m.hasZ {
			return 0, false
		}
		m.hasZ, v = false, m.zv
		m.n--
	} else {
		s, ok, h := ws.idFind(uint64(k))
		if !ok {
			return 0, false
		}
		v = *m.at(s)
		ws.idDelete(h, s)
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
	// Only now, with no node or alias naming k: a smaller table is built
	// from them.
	ws.shrinkIDs()
	return ni, true
}

// shrinkIDs moves the map to a quarter of its table when it is left mostly
// empty (and is past its floor, and no batch holds claims).
func (ws *State) shrinkIDs() {
	m := &ws.ids
	if c := len(m.b); c > max(idShrinkAbove, m.floor) && m.n*16 < m.slots() && ws.batch == nil {
		ws.idGrow(max(c/4, m.floor))
	}
}

// idDelete empties slot s of the id of hash h and takes back the overflows
// its insert counted.
func (ws *State) idDelete(h uint64, s int) {
	m := &ws.ids
	m.n--
	last := uint64(s >> idSlotBits)
	m.b[last].setTag(s&(1<<idSlotBits-1), 0)
	for b := h & m.bmask; b != last; b = (b + 1) & m.bmask {
		if m.b[b].over != 255 {
			m.b[b].over--
		}
	}
}

// idShrinkAbove: tables up to 64 buckets (4 KiB) keep their size.
const idShrinkAbove = 64

// reserveIDs grows the map, if needed, so that n more ids fit without
// growing.
func (ws *State) reserveIDs(n int) {
	if ws.ids.n+n > len(ws.ids.b)*idBucketFill {
		c := idBuckets(ws.ids.n + n)
		if have := len(ws.ids.b); have < ws.ids.quad {
			c = max(c, min(4*have, ws.ids.quad))
		}
		ws.idGrow(c)
	}
}

// idQuadrupleBelow: a map of fewer buckets (16 KiB) grows 4× instead of 2×,
// up to this size; in a wide index (more than 128 workers), up to
// idQuadrupleBelowWide (1 KiB), as its many small workers would keep twice
// their ids' room. Each growth moves every id, so doubling moves an id
// one to two times over a worker's first thousands of blocks; skipping
// every other small size removes a third of the moves (96 workers on the
// trace from empty: growth 31.3M → 20.8M instructions a fill, 4% less
// time). Workers past a few thousand blocks end at the size they did
// (memory per block unchanged at 16 and 96 workers); workers of about a
// thousand (256 workers on the trace) may end at twice it.
const (
	idQuadrupleBelow     = 256
	idQuadrupleBelowWide = 16
)

// idGrow moves the map to a table of c buckets. It walks the nodes and the
// aliases in order, not the old table: the table names a node by index, so
// the old table's order would read the nodes' ids in random order, a cache
// miss each, where the nodes' order reads them as a stream. No block is
// claimed while it runs: claims are made after reserveIDs, and the map
// does not shrink while a batch holds claims.
func (ws *State) idGrow(c int) {
	m := &ws.ids
	m.alloc(c)
	base := unsafe.Pointer(unsafe.SliceData(m.b))
	for ci, ch := range ws.chunks {
		first := uint32(ci) << nodeChunkBits
		if first >= ws.n {
			break // the chunks past the nodes in use (a hint's)
		}
		chunk := ch[:min(uint32(len(ch)), ws.n-first)]
		for k := 0; k < len(chunk); k++ {
			// placeRun places the ids whose home bucket has room; the one
			// it stops at (rare) goes on past its home here.
			if k += placeRun(base, m.bmask, ws.k0, ws.k1, chunk[k:], first+uint32(k)); k < len(chunk) {
				ws.idPlace(ws.idHash(uint64(chunk[k].ext)), first+uint32(k))
			}
		}
	}
	for j, a := range ws.aliases {
		if a.node != freeAlias && a.ext != 0 {
			ws.idPlace(ws.idHash(uint64(a.ext)), idAlias|uint32(j))
		}
	}
}

// placeRun is idGrow's loop over nodes ns, node first on: it places each
// own id (not 0) in its home bucket of the new table (buckets from base,
// bmask the buckets less one, hashed with k0 and k1), in its first free
// slot (filled: the table has had only inserts), and returns the index of
// the first whose home bucket is full (len(ns) when none is), placing
// nothing from it on. It calls nothing and keeps the table in registers:
// as a method over the map's fields, the loop reloaded them after every
// store and spilled the hash, some 50 instructions an id.
func placeRun(base unsafe.Pointer, bmask, k0, k1 uint64, ns []node, first uint32) int {
	for k := range ns {
		n := &ns[k]
		if n.st&nodeOwnID == 0 || n.ext == 0 {
			continue
		}
		h := keyhash.Hash(uint64(n.ext), k0, k1)
		bk := (*idBucket)(unsafe.Add(base, (h&bmask)*uint64(unsafe.Sizeof(idBucket{}))))
		j := bk.filled()
		if j >= idBucketSlots {
			return k
		}
		bk.put(j, idTag(h), first+uint32(k))
	}
	return len(ns)
}

// resetIDs empties the map, keeping its memory when it is small.
func (ws *State) resetIDs() {
	m := &ws.ids
	m.n, m.hasZ = 0, false
	ws.aliases, ws.freeAliases = ws.aliases[:0], ws.freeAliases[:0]
	if len(m.b) > max(idShrinkAbove, m.floor) {
		m.alloc(m.floor)
		return
	}
	clear(m.b)
}

// eachID calls f with every id and its node.
func (ws *State) eachID(f func(k uint64, node uint32)) {
	m := &ws.ids
	if m.hasZ {
		f(0, ws.idNode(m.zv))
	}
	for b := range m.b {
		bk := &m.b[b]
		for j := range idBucketSlots {
			if bk.tag(j) != 0 {
				f(uint64(ws.idKey(bk.vals[j])), ws.idNode(bk.vals[j]))
			}
		}
	}
}

// idAddr is the address of the bucket where the id of hash h is probed
// first, for a prefetch (prepKeys computes it with the table in
// registers).
func (ws *State) idAddr(h uint64) uintptr {
	return uintptr(unsafe.Pointer(unsafe.SliceData(ws.ids.b))) + uintptr(h&ws.ids.bmask)*unsafe.Sizeof(idBucket{})
}
