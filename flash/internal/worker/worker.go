package worker

import (
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/chain"
	"github.com/flashindexer/flashindexer/internal/keyhash"
	"github.com/flashindexer/flashindexer/internal/order"
	"github.com/flashindexer/flashindexer/internal/pages"
)

// node is one content (position, sequence hash) a worker holds or held: the
// worker's private view of a block. Nodes form a forest by parent content.
//
//	refs > 0            the worker holds the content, under refs engine ids
//	refs == 0           a ghost: kept only because it has children, so that
//	                    storing the content again re-attaches them
//	attached            the worker's bit is set in the shared entry at
//	                    (pos, seq); attached ⇔ refs > 0 and (pos == 0 or
//	                    parent attached)
//
// The last rule keeps every worker's shared set prefix-closed, which is what
// lets the jump search skip positions exactly.
//
// A node is what the common path needs and no more (32 bytes): the content,
// its engine id (the worker's id map keeps no keys), the parent (to name a
// child's position and chain), and the number of children (so removing a
// leaf, the common eviction, knows it is one). The
// lists of children that re-attachment walks live apart, in links, and
// only while the worker is complex.
type node struct {
	seq    uint64
	ext    uint64 // the first engine id it got (ids.go)
	pos    uint32
	parent uint32 // node index + 1; 0 at position 0
	kids   uint32 // live nodes whose parent this is
	st     uint32 // refs in the low bits, nodeOwnID, nodeLive, nodeAttached
}

// nodeLinks are a node's place in its parent's list of children: first
// child, next and previous sibling, each index + 1.
type nodeLinks struct {
	child, next, prev uint32
}

// A node's st word: its refs (engine ids naming the content; 2^29 of them
// would take more memory than any machine has) and three flags.
const (
	nodeOwnID    = 1 << 29 // ext is one of its ids (ids.go)
	nodeLive     = 1 << 30 // in use (not on the free list)
	nodeAttached = 1 << 31 // the worker's bit is set in the shared entry
	nodeRefs     = nodeOwnID - 1
)

func (n *node) refs() uint32   { return n.st & nodeRefs }
func (n *node) live() bool     { return n.st&nodeLive != 0 }
func (n *node) attached() bool { return n.st&nodeAttached != 0 }
func (n *node) setAttached(a bool) {
	if a {
		n.st |= nodeAttached
	} else {
		n.st &^= nodeAttached
	}
}

// nodeChunkBits: nodes live in chunks of 32 (1 KiB), so a growing worker
// copies no nodes. A worker of a narrow index (up to 128 workers) makes
// its chunks in slabs, each as many chunks as it has (from 2 up to
// slabChunks) in one allocation, so that its nodes lie in long runs,
// which its id map's growth reads as a stream (with chunks made one at a
// time, storing the trace at 16 and 96 workers took 10-15% longer). A
// wide index's workers, many and mostly small, take them one at a time
// from their lane's pool (pool.go), so each keeps less than a chunk past
// its nodes: with chunks of 512,
// workers of about a thousand blocks (256 workers on the trace) kept 39
// bytes of nodes per (block, worker); so, 33.
const nodeChunkBits = 5

// State is the private state of one worker, owned by its lane.
//
// A worker starts simple: every node it has is held and attached, so a
// content it holds is exactly one whose shared entry has its bit set, and
// storing a block needs one private lookup (the engine id). The first ghost,
// detached node or second engine id for one content makes it complex: from
// then on (until Cleared) a content map finds nodes by (position, sequence
// hash).
type State struct {
	ID   uint64 // the worker's ID
	Rank uint32 // its DP rank
	// Slot is its worker slot: its bit in the shared entries; -1 until the
	// first valid Stored event gives it one.
	Slot int
	// Hint is its capacity hint in blocks, up to 2^20 (0: none), as its
	// state was made for it.
	Hint int
	ids  idMap // engine id → node (ids.go)
	// aliases are the ids past a content's first; freeAliases, the
	// unused ones.
	aliases     []aliasID
	freeAliases []uint32
	// batch is the Stored event's blocks while it is validated and
	// applied: claimed ids are named by their index in it.
	batch   []Block
	k0, k1  uint64 // keys of the ids' hash
	complex bool
	content contentMap // (position, sequence hash) → node index, while complex
	chunks  []*chunk
	// pool: a wide index's worker takes its chunks one at a time from its
	// lane's pool (pool.go); nil, it makes them in slabs of its own
	// (nodeChunkBits).
	pool *chunkPool
	// chunkArr holds chunks' first four entries: a worker of up to 128
	// nodes makes no slice of chunks.
	chunkArr [4]*chunk
	links    [][]nodeLinks // by chunk, like chunks, while complex
	// hintChunks: chunks made for the worker's capacity hint, kept when
	// it is cleared.
	hintChunks int
	n          uint32 // nodes ever used: chunks hold [0, n)
	// freed lists the free nodes through their parent fields (index + 1;
	// 0 ends it): the list costs no memory and never grows.
	freed, nfree uint32
	// tiers are the nodes' tier words, by node, in an index of several
	// tiers (tiers.go); nil otherwise.
	tiers []uint32
}

// New returns the state of a worker that holds nothing, in worker slot
// slot (-1: none yet), made for its capacity hint (Reserve).
func (o *Owner) New(id uint64, rank uint32, slot int) *State {
	ws := &State{ID: id, Rank: rank, Slot: slot}
	if o.W.Sets != nil && !o.W.Sets.Inline {
		ws.pool = &o.pool
	}
	ws.chunks = ws.chunkArr[:0]
	hint := 0
	if o.Hint != nil {
		hint = o.Hint(id, rank)
	}
	ws.k0, ws.k1 = o.K0, o.K1|1
	ws.Hint = min(max(hint, 0), maxHintKeys)
	ws.ids.floor = idBuckets(ws.Hint)
	ws.ids.quad = idQuadrupleBelow
	if o.W.Sets != nil && !o.W.Sets.Inline {
		ws.ids.quad = idQuadrupleBelowWide
	}
	if o.tiered() {
		o.makeComplex(ws)
	}
	if !o.Reserve {
		// The map grows 4× at a time up to the hint's size, and keeps
		// it: fewer moves of every id, memory that follows the ids.
		ws.ids.quad = max(ws.ids.quad, ws.ids.floor)
		ws.ids.alloc(idBuckets(0))
		return ws
	}
	ws.ids.alloc(ws.ids.floor)
	if hint > 0 {
		// The hint's nodes made now, one allocation cut into chunks; min
		// bounds what a wrong hint can cost before any block arrives.
		ws.hintChunks = min((hint+1<<nodeChunkBits-1)>>nodeChunkBits, maxHintChunks)
		if ws.hintChunks > len(ws.chunkArr) {
			ws.chunks = make([]*chunk, 0, ws.hintChunks)
		}
		var all []node
		ws.chunks, all = appendChunks(ws.chunks, ws.hintChunks)
		// Its pages, and the id map's, are mapped now, off the events.
		pages.Touch(all)
		pages.Touch(ws.ids.b)
	}
	return ws
}

// Blocks returns the number of engine ids the worker holds.
func (ws *State) Blocks() int { return ws.ids.n }

// chunk is a chunk of nodes: the worker's chunks are a word each.
type chunk [1 << nodeChunkBits]node

// appendChunks appends k new chunks to cs, made in one allocation, whose
// nodes it returns too.
func appendChunks(cs []*chunk, k int) ([]*chunk, []node) {
	all := make([]node, k<<nodeChunkBits)
	for j := range k {
		cs = append(cs, (*chunk)(all[j<<nodeChunkBits:]))
	}
	return cs, all
}

// slabChunks: a narrow index's worker makes its chunks up to 16 at a time
// (512 nodes, 16 KiB).
const slabChunks = 16

// maxHintChunks bounds the node chunks a capacity hint makes before any
// block arrives: 2^20 nodes.
const maxHintChunks = 1 << (20 - nodeChunkBits)

func (ws *State) node(i uint32) *node {
	return &ws.chunks[i>>nodeChunkBits][i&(1<<nodeChunkBits-1)]
}

// lk returns node i's links; the worker is complex.
func (ws *State) lk(i uint32) *nodeLinks {
	return &ws.links[i>>nodeChunkBits][i&(1<<nodeChunkBits-1)]
}

// newNode puts n in a free node, links it under its parent, and returns
// its index.
func (ws *State) newNode(n node) uint32 {
	n.st |= nodeLive
	i, p := ws.nextFresh()
	if p == nil {
		i, p = ws.takeNode()
	}
	*p = n
	if !ws.complex {
		// link's simple case, written out: a call per stored block.
		if n.parent != 0 {
			ws.node(n.parent-1).kids++
		}
		return i
	}
	if int(i>>nodeChunkBits) == len(ws.links) {
		ws.links = append(ws.links, make([]nodeLinks, 1<<nodeChunkBits))
	}
	*ws.lk(i) = nodeLinks{}
	ws.link(i, n.parent)
	return i
}

// freshNodes takes up to n nodes never used, consecutive in one chunk,
// when no node is free and the chunk is made, and returns the first's
// index and the nodes; else it takes none.
func (ws *State) freshNodes(n int) (uint32, []node) {
	i, ch := ws.n, ws.peekFresh(n)
	ws.n += uint32(len(ch))
	return i, ch
}

// peekFresh returns the nodes freshNodes(n) would take, taking none.
func (ws *State) peekFresh(n int) []node {
	if ci := int(ws.n >> nodeChunkBits); ws.freed == 0 && ci < len(ws.chunks) {
		off := int(ws.n & (1<<nodeChunkBits - 1))
		return ws.chunks[ci][off:min(len(chunk{}), off+n)]
	}
	return nil
}

// prefetchNodes asks for the lines of the next n fresh nodes, those of
// their chunk that exist, which Commit writes: nodes are made ahead of
// their use (a chunk at a time, or all of a hinted worker's) and are out
// of cache, and a store that misses holds its place in the store queue
// until its line comes (building the trace's index at 16 workers: 4.5%
// faster with hints, 2.7% from empty).
func (ws *State) prefetchNodes(n int) {
	if ch := ws.peekFresh(n); len(ch) > 0 {
		order.PrefetchLines(uintptr(unsafe.Pointer(&ch[0])), uintptr(len(ch))*unsafe.Sizeof(node{}))
	}
}

// nextFresh takes the next node never used and returns it, when no node
// is free and its chunk is made (newNode's common case, inlined); else it
// takes nothing and returns nil.
func (ws *State) nextFresh() (uint32, *node) {
	i := ws.n
	if ci := int(i >> nodeChunkBits); ws.freed == 0 && ci < len(ws.chunks) {
		ws.n++
		return i, &ws.chunks[ci][i&(1<<nodeChunkBits-1)]
	}
	return 0, nil
}

// takeNode takes a node for newNode from the free list, or past the
// chunks made.
func (ws *State) takeNode() (uint32, *node) {
	var i uint32
	if ws.freed != 0 {
		i = ws.freed - 1
		ws.freed = ws.node(i).parent
		ws.nfree--
		return i, ws.node(i)
	}
	i = ws.n
	if int(i>>nodeChunkBits) == len(ws.chunks) {
		// A chunk from the lane's pool, or a slab of as many chunks as
		// the worker has, from 2 up to slabChunks, in one allocation.
		if ws.pool != nil {
			ws.chunks = append(ws.chunks, ws.pool.get())
		} else {
			k := min(max(len(ws.chunks), 2), slabChunks)
			ws.chunks, _ = appendChunks(ws.chunks, k)
		}
	}
	ws.n++
	return i, ws.node(i)
}

// makeComplex builds the content map and the lists of children from every
// node in use.
func (o *Owner) makeComplex(ws *State) {
	if ws.complex {
		return
	}
	ws.complex = true
	ws.content.init(o.K1, o.K0)
	for range len(ws.chunks) - len(ws.links) {
		ws.links = append(ws.links, make([]nodeLinks, 1<<nodeChunkBits))
	}
	for i := uint32(0); i < ws.n; i++ {
		*ws.lk(i) = nodeLinks{}
	}
	for i := uint32(0); i < ws.n; i++ {
		if n := ws.node(i); n.live() {
			ws.content.put(n.pos, n.seq, i)
			if n.parent != 0 {
				ws.listChild(i, n.parent)
			}
		}
	}
}

// link makes node i a child of node parent-1 (parent 0: a root).
func (ws *State) link(i, parent uint32) {
	if parent == 0 {
		return
	}
	ws.node(parent-1).kids++
	if ws.complex {
		ws.listChild(i, parent)
	}
}

// listChild puts node i first in the list of node parent-1's children.
func (ws *State) listChild(i, parent uint32) {
	pl := ws.lk(parent - 1)
	l := ws.lk(i)
	l.next, l.prev = pl.child, 0
	if pl.child != 0 {
		ws.lk(pl.child - 1).prev = i + 1
	}
	pl.child = i + 1
}

// unlink takes node i out of its parent's children.
func (ws *State) unlink(i uint32) {
	n := ws.node(i)
	if n.parent == 0 {
		return
	}
	ws.node(n.parent-1).kids--
	if !ws.complex {
		return
	}
	l := ws.lk(i)
	if l.prev != 0 {
		ws.lk(l.prev - 1).next = l.next
	} else {
		ws.lk(n.parent - 1).child = l.next
	}
	if l.next != 0 {
		ws.lk(l.next - 1).prev = l.prev
	}
}

// Prepare validates a Stored event of ws whole: blocks placed under the
// engine id parent (when hasParent), none past maxDepth. It returns
// ErrUnknownParent, ErrTooDeep or ErrHashConflict and changes nothing; or
// nil, and then the caller MUST call Commit with ws before any other call
// of the Owner (a new worker gets its slot in between), or drop ws if it
// is a new worker's state that gets no slot.
//
// Validation claims each new engine id's slot in the worker's map at once
// (valued idClaim|i), so a second use of an id in the batch finds the claim
// and Commit fills the slot it was given, with no second probe; a rejected
// batch gives its claims back. blocks stays the caller's until Commit.
func (o *Owner) Prepare(ws *State, parent uint64, hasParent bool, blocks []Block, maxDepth int) error {
	pos, prevSeq, par := 0, uint64(0), uint32(0)
	if hasParent {
		pi, ok := ws.getID(parent)
		if !ok {
			return ErrUnknownParent
		}
		p := ws.node(pi)
		pos, prevSeq, par = int(p.pos)+1, p.seq, pi+1
	}
	if pos+len(blocks) > maxDepth {
		return ErrTooDeep
	}
	o.scratch(len(blocks))
	pending, keys := o.pending[:len(blocks)], o.keys[:len(blocks)]
	prefetch := len(blocks) >= prefetchFrom
	if prefetch {
		ws.prefetchNodes(len(blocks))
	}
	// The worker's plane's table, for the prefetches (a new worker's slot
	// comes after validation: plane 0's, a guess).
	ptab, _ := o.W.Plane(max(ws.Slot, 0))
	ws.reserveIDs(len(blocks))
	ws.batch = blocks
	// Each engine id's hash, for its prefetch and then its claim, and
	// each block's sequence key.
	idKr, seqKr := keyhash.New(ws.k0, ws.k1), o.W.Tabs[0].Keyer()
	idBase, idPrefetch := unsafe.Pointer(unsafe.SliceData(ws.ids.b)), prefetch && ws.ids.n > 0
	if !idKr.Degenerate() && !seqKr.Degenerate() {
		prepKeys(keys, pending, blocks, prevSeq, pos == 0, idKr, seqKr, idBase, ws.ids.bmask, idPrefetch)
	} else {
		// Tests' secrets, which hash every key alike: the Go loops.
		prepKeysGo(keys, pending, blocks, prevSeq, pos == 0, idKr, seqKr, idBase, ws.ids.bmask, idPrefetch)
	}
	// Each block's first bucket in its position's shard table: a lane
	// alone on its tables asks for them before the claims, whose work
	// their misses overlap (building the trace's index with hints: 5%
	// faster at 16 workers than after the claims). Where other lanes
	// share the tables it asks for their headers first, which other
	// lanes write, and for the buckets after the claims, which need the
	// headers; a lane alone has one header a position, which its stores
	// keep in cache, and asking for it cost more than it saved (without
	// it: 3% faster at 16 workers, 4.5% at 96).
	early := prefetch && o.W.Excl
	if early {
		ptab.PrefetchBuckets(pos, keys)
	} else if prefetch {
		for i := range keys {
			ptab.PrefetchTable(pos+i, keys[i])
		}
	}
	if !ws.claimAll(blocks, pending, keys, pos) {
		// The same engine id twice in one batch, or an id the worker has
		// for another content.
		ws.batch = nil
		return ErrHashConflict
	}
	if prefetch && !early {
		ptab.PrefetchBuckets(pos, keys)
	}
	o.pos, o.parent = pos, par
	return nil
}

// Commit applies the batch that Prepare validated, and returns how many of
// its blocks the worker newly holds and how many it held already.
func (o *Owner) Commit(ws *State) (stored, dup int) {
	blocks, pos, parent := ws.batch, o.pos, o.parent
	ws.batch = nil // the caller's: not kept
	tab, b := o.W.Plane(ws.Slot)
	o.tab, o.bit = tab, 1<<b
	pending, keys := o.pending[:len(blocks)], o.keys[:len(blocks)]
	i := 0
	if !ws.complex && o.W.Excl {
		// storeBlock's common case, written out: a simple worker, alone on
		// its tables. The table sets the worker's bit for a run of
		// blocks in one call, up to a block whose bit it has: a
		// duplicate (held already, so its bit is set), or a second engine
		// id for content the worker holds, which goes to storeBlock, where
		// the bit is found again and the worker made complex. Then the
		// run's nodes are written, with no call.
		// pp is the parent's node when the block before made it (nil:
		// look it up), as it is for all but a batch's first block.
		var pp *node
		for i < len(pending) {
			if pending[i].dup() {
				parent, pp = pending[i].held, nil
				i++
				continue
			}
			run := i + o.W.AttachRun(pos+i, keys[i:], ws.Slot)
			for i < run {
				ni, ns := ws.freshNodes(run - i)
				if len(ns) == 0 {
					ni = ws.newNode(node{seq: keys[i].K, ext: blocks[i].Hash, pos: uint32(pos + i), parent: parent, st: 1 | nodeOwnID | nodeAttached})
					*ws.ids.word(pending[i].slot) = ni
					stored++
					parent, pp = ni+1, ws.node(ni)
					i++
					continue
				}
				// newNode's common case, written out for a run of fresh
				// nodes, each the parent of the next.
				if parent != 0 {
					if pp == nil {
						pp = ws.node(parent - 1)
					}
					pp.kids++
				}
				n := len(ns)
				freshLoop(unsafe.Pointer(unsafe.SliceData(ws.ids.b)), &ws.ids.zv, ns, keys[i:i+n], blocks[i:i+n], pending[i:i+n], uint32(pos+i), ni, parent)
				ns[n-1].kids = 0
				parent, pp = ni+uint32(len(ns)), &ns[len(ns)-1]
				stored += len(ns)
				i += len(ns)
			}
			if i < len(pending) && !pending[i].dup() {
				break
			}
		}
	}
	for ; i < len(pending); i++ {
		p := &pending[i]
		if p.dup() {
			// Held: in an index of several tiers, perhaps not in this
			// event's tier, which it then joins.
			if o.tiered() && o.addTier(ws, blocks[i].Hash, p.held-1) {
				stored++
			}
			parent = p.held
			continue
		}
		stored++
		ni := o.storeBlock(ws, blocks[i].Hash, uint32(pos+i), keys[i], parent, p.slot)
		parent = ni + 1
	}
	return stored, len(blocks) - stored
}

// freshKids and freshSt are a fresh node's kids and state, as freshLoop
// writes them (the last node's kids then set to 0).
const (
	freshKids = 1
	freshSt   = 1 | nodeOwnID | nodeAttached | nodeLive
)

// freshLoop writes fresh nodes ns (node ni, ni+1, …) for the blocks of
// keys, blocks and pending (as long as ns), from position pos, each the
// parent of the next and the first under node parent-1; and gives each
// block's engine id its node, in the map whose table is at base and whose
// id 0's word is zv. Commit calls it for a run of fresh nodes of one
// chunk: apart from Commit, whose loop keeps more than the registers hold,
// its loop keeps what it needs in them.
func freshLoop(base unsafe.Pointer, zv *uint32, ns []node, keys []keyhash.Key, blocks []Block, pending []pendingBlock, pos, ni, parent uint32) {
	keys, blocks, pending = keys[:len(ns)], blocks[:len(ns)], pending[:len(ns)]
	for k := range ns {
		np := &ns[k]
		np.seq, np.ext, np.pos, np.parent = keys[k].K, blocks[k].Hash, pos, parent
		np.kids, np.st = freshKids, freshSt
		*idWord(base, zv, pending[k].slot) = ni
		parent = ni + 1
		ni++
		pos++
	}
}

// prepKeysGo writes, for each of blocks, its engine id's hash under idKr
// into its pending block (idh), with a prefetch of the id's home bucket in
// the worker's map (buckets from base, bmask the buckets less one) when
// prefetch is set; then keys[i], the shared tables' Key (under seqKr) of
// the block's sequence hash: chained from prev, the parent's, or for a
// block at position 0 (root: the batch's first) its local hash alone.
// The ids' loop comes first: their buckets' misses overlap the chain's
// work, and claimAll reads the buckets next. On amd64 the two loops are
// one in assembly (prepKeys, prepare_amd64.s), where the independent id
// hashes fill the chain's latency; Go's multiplies pinned the registers
// they use, and its loops spilled around them.
func prepKeysGo(keys []keyhash.Key, pending []pendingBlock, blocks []Block, prev uint64, root bool, idKr, seqKr keyhash.Keyer, base unsafe.Pointer, bmask uint64, prefetch bool) {
	keys, pending = keys[:len(blocks)], pending[:len(blocks)]
	for i, b := range blocks {
		h := idKr.Hash(b.Hash)
		pending[i].idh = h
		if prefetch {
			order.Prefetch(uintptr(base) + uintptr(h&bmask)*unsafe.Sizeof(idBucket{}))
		}
	}
	for i, b := range blocks {
		if i == 0 && root {
			prev = b.Local
		} else {
			prev = chain.Chain(prev, b.Local)
		}
		keys[i] = seqKr.Key(prev)
	}
}

// unclaim gives back the engine ids that validation claimed for blocks,
// when it rejects the batch.
func (ws *State) unclaim(blocks []Block, pending []pendingBlock) {
	for i, b := range blocks {
		if !pending[i].dup() {
			ws.dropID(b.Hash)
		}
	}
}

// prefetchFrom: batches of at least this many blocks are prefetched; for
// fewer, the lines are needed before a prefetch could bring them. Prepare
// asks for each engine id's first slot in the worker's map before it
// validates the batch, for each block's shard table header as validation
// computes its sequence hash (when other lanes share the table), and
// then for the first bucket of each block at its position, in the
// worker's plane's table; the batch's cache misses then overlap instead of
// queueing one block behind another (about 12% less time per stored block
// building the trace's index, measured when it came in).
const prefetchFrom = 4

// storeBlock adds engine id k, claimed at slot of the worker's map, for the
// content (pos, key.K) under node parent-1 and returns the content's node.
// key is hashed for the shared table once, in Prepare, for its prefetches
// and this write.
func (o *Owner) storeBlock(ws *State, k uint64, pos uint32, key keyhash.Key, parent uint32, slot idSlot) uint32 {
	seq := key.K
	if !ws.complex {
		// Simple: every node is attached, so the parent is, and the shared
		// entry's bit says whether the worker holds this content already.
		var had bool
		if o.W.Direct() {
			had = o.tab.Or(int(pos), key, o.bit, 0)&o.bit != 0
		} else {
			had = o.W.AttachKey(int(pos), key, ws.Slot)
		}
		if !had {
			// A new node: the id is its own.
			ni := ws.newNode(node{seq: seq, ext: k, pos: pos, parent: parent, st: 1 | nodeOwnID | nodeAttached})
			*ws.ids.word(slot) = ni
			return ni
		}
		// A second engine id for content the worker holds.
		o.makeComplex(ws)
	}
	ni, ok := ws.content.get(pos, seq)
	if !ok {
		ni = ws.newNode(node{seq: seq, pos: pos, parent: parent})
		ws.content.put(pos, seq, ni)
		if o.tiered() {
			ws.freshTiers(ni)
		}
	}
	w := ws.ids.word(slot)
	ws.setID(w, k, ni)
	n := ws.node(ni)
	n.st++ // one more ref
	if o.tiered() {
		ws.setIDTiers(*w, 1<<o.Tier)
		o.recut(ws, ni)
		return ni
	}
	if n.refs() == 1 && (n.parent == 0 || ws.node(n.parent-1).attached()) {
		o.attachSubtree(ws, ni)
	}
	return ni
}

// attachSubtree attaches node i and every held descendant reachable through
// held nodes.
func (o *Owner) attachSubtree(ws *State, i uint32) {
	st := append(o.stack[:0], i)
	for len(st) > 0 {
		k := st[len(st)-1]
		st = st[:len(st)-1]
		n := ws.node(k)
		o.W.Attach(int(n.pos), n.seq, ws.Slot)
		n.setAttached(true)
		if n.kids == 0 {
			continue
		}
		for c := ws.lk(k).child; c != 0; c = ws.lk(c - 1).next {
			if cn := ws.node(c - 1); cn.refs() > 0 && !cn.attached() {
				st = append(st, c-1)
			}
		}
	}
	o.stack = st
}

// detachSubtree detaches node i and every attached descendant.
func (o *Owner) detachSubtree(ws *State, i uint32) {
	st := append(o.stack[:0], i)
	for len(st) > 0 {
		k := st[len(st)-1]
		st = st[:len(st)-1]
		n := ws.node(k)
		if !n.attached() {
			continue
		}
		o.W.Detach(int(n.pos), n.seq, ws.Slot)
		n.setAttached(false)
		if n.kids == 0 {
			continue
		}
		for c := ws.lk(k).child; c != 0; c = ws.lk(c - 1).next {
			if ws.node(c - 1).attached() {
				st = append(st, c-1)
			}
		}
	}
	o.stack = st
}

// Remove takes the engine ids hashes from ws and returns how many it held
// (the others are skipped).
func (o *Owner) Remove(ws *State, hashes []uint64) (removed int) {
	if o.tiered() {
		removed = o.removeTiered(ws, hashes)
		o.compactIfSparse(ws)
		return removed
	}
	for _, h := range hashes {
		ni, ok := ws.dropID(h)
		if !ok {
			continue
		}
		removed++
		n := ws.node(ni)
		n.st-- // one ref fewer
		if n.refs() > 0 {
			continue
		}
		if o.TrackGone {
			o.Gone = append(o.Gone, Content{n.pos, n.seq})
		}
		if n.kids != 0 {
			// It stays as a ghost, and its held descendants lose their
			// attachment: the worker is no longer simple.
			o.makeComplex(ws)
		}
		if n.attached() {
			o.detachSubtree(ws, ni)
		}
		ws.collect(ni)
	}
	o.compactIfSparse(ws)
	return removed
}

// collect frees node i and then its ancestors while they are ghosts with no
// children left.
func (ws *State) collect(i uint32) {
	for {
		n := ws.node(i)
		if n.refs() > 0 || n.kids != 0 {
			return
		}
		ws.unlink(i)
		parent := n.parent
		if ws.complex {
			ws.content.del(n.pos, n.seq)
		}
		*n = node{parent: ws.freed}
		ws.freed = i + 1
		ws.nfree++
		if parent == 0 {
			return
		}
		i = parent - 1
	}
}

// Clear drops everything the worker holds; it keeps its slot and becomes
// simple again.
func (o *Owner) Clear(ws *State) {
	if o.tiered() {
		o.clearTiered(ws)
	}
	for i := uint32(0); i < ws.n; i++ {
		if n := ws.node(i); n.attached() {
			o.W.Detach(int(n.pos), n.seq, ws.Slot)
		}
		*ws.node(i) = node{}
	}
	ws.n, ws.freed, ws.nfree = 0, 0, 0
	// Keep up to 4K nodes of memory, or what the capacity hint made, for
	// the next fill.
	if keep := max(4096>>nodeChunkBits, ws.hintChunks); len(ws.chunks) > keep {
		ws.putChunks(ws.chunks[keep:])
		clear(ws.chunks[keep:]) // else the spare capacity still holds them
		ws.chunks = ws.chunks[:keep]
	}
	ws.resetIDs()
	ws.complex = false
	ws.content = contentMap{}
	ws.links = nil
	if o.tiered() {
		o.makeComplex(ws)
	}
}
