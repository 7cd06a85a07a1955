package worker

import (
	"errors"

	"github.com/flashindexer/flashindexer/flash/internal/entry"
	"github.com/flashindexer/flashindexer/internal/keyhash"
	"github.com/flashindexer/flashindexer/shardmap"
)

// Errors of a Stored event that Prepare rejects (flash re-exports them).
var (
	// ErrUnknownParent: a Stored event names a parent that this worker does not
	// hold. Nothing of the event is applied.
	ErrUnknownParent = errors.New("flash: stored event's parent is not held by the worker")
	// ErrHashConflict: a Stored event carries an external hash that the worker
	// already holds at another position, or with other content (another
	// sequence hash), or twice in one batch. Nothing of the event is applied.
	ErrHashConflict = errors.New("flash: external hash already held at another place")
	// ErrTooDeep: a Stored event would place a block past the configured
	// maximum depth.
	ErrTooDeep = errors.New("flash: block position past the configured maximum depth")
)

// Block is one block of a Stored event: the engine's id for it and the hash
// of its tokens (flash.Block's layout).
type Block struct {
	Hash  uint64
	Local uint64
}

// Owner is what one lane uses to change the state of the workers it owns:
// their entries' writer, the keys of their maps' hash, and scratch. Its
// methods MUST be called only by the lane's writer (or with the lane held).
type Owner struct {
	W      entry.Writer
	K0, K1 uint64 // keys of the private maps' hash
	// Hint returns a new worker's capacity hint in blocks (nil: none).
	Hint func(id uint64, rank uint32) int
	// Reserve: a hinted worker's nodes and id map are made for its hint
	// when it is made; else its id map grows toward the hint in 4× steps.
	Reserve bool
	// Tiers is the index's number of tiers (0 or 1: one); Tier is the
	// tier of the event being applied (tiers.go).
	Tiers int
	Tier  uint8
	// With TrackGone set, Remove lists in Gone the contents it took from
	// their worker (no engine id names them any more), for the caller to
	// read and reset.
	TrackGone bool
	Gone      []Content

	// pool: the node chunks of a wide index's workers (pool.go).
	pool chunkPool

	pending []pendingBlock // one event's validated blocks
	// keys are their sequence hashes, hashed for the shared table, apart
	// from pending so that Commit hands a run of them to the table in one
	// call (shardmap.Writer.OrRun).
	keys   []keyhash.Key
	pos    int    // the validated event's first position
	parent uint32 // and its parent node + 1
	// tab and bit are the committing worker's plane's table and its bit
	// in that table's sets (entry.Writer.Plane), set once an event.
	tab   shardmap.Writer
	bit   uint64
	stack []uint32 // subtree walks
	// checkKids and checkOver are the invariant checks' scratch
	// (flash_invariants builds only; nil otherwise).
	checkKids []uint32
	checkOver []int
}

// Content is one content a worker held: its position and sequence hash.
type Content struct {
	Pos uint32
	Seq uint64
}

// A pendingBlock is what Prepare finds for a block of the batch. It is 16
// bytes, as a Block and a keyhash.Key are, so that the assembly loops
// over the three step by one index.
type pendingBlock struct {
	idh  uint64 // the engine id's hash in the worker's map
	slot idSlot // a new block's engine id's value word in the worker's map (claimID)
	held uint32 // a duplicate's node + 1 (claimAll checks it); 0: a new block
}

// dup reports whether the block is one the worker holds.
func (p *pendingBlock) dup() bool { return p.held != 0 }

// keepScratch: the scratch buffers for one event stay between events up to
// this many entries; a larger event's go with it.
const keepScratch = 4096

// minScratch: a batch's scratch starts with room for this many blocks.
const minScratch = 64

// scratchSize is the room a scratch buffer that holds have entries grows to
// for n: at least minScratch and twice have, up to keepScratch (what
// TrimScratch keeps), and n. Batches that grow one block at a time then
// grow the buffer a few times, not once each.
func scratchSize(n, have int) int {
	return max(n, min(max(2*have, minScratch), keepScratch))
}

// ReserveScratch makes the batch scratch hold an event of n blocks, up to
// what TrimScratch keeps: a worker declared with a capacity hint then
// stores its first long events without allocating. A batch that Prepare
// validated stays in it, for Commit.
func (o *Owner) ReserveScratch(n int) {
	if n = min(n, keepScratch); cap(o.pending) < n {
		p := make([]pendingBlock, n)
		copy(p, o.pending[:cap(o.pending)])
		o.pending = p
		k := make([]keyhash.Key, n)
		copy(k, o.keys[:cap(o.keys)])
		o.keys = k
	}
}

// scratch makes the batch scratch hold n blocks.
func (o *Owner) scratch(n int) {
	if cap(o.pending) < n {
		c := scratchSize(n, cap(o.pending))
		o.pending, o.keys = make([]pendingBlock, c), make([]keyhash.Key, c)
	}
}

// TrimScratch releases scratch buffers that one large event grew, and
// empties Gone.
func (o *Owner) TrimScratch() {
	o.Gone = o.Gone[:0]
	// Nearly always none did: one test of them all, exact that way (an OR
	// of the capacities is at least each of them).
	if cap(o.pending)|cap(o.stack)|cap(o.keys)|cap(o.Gone) <= keepScratch && cap(o.checkKids)|cap(o.checkOver) <= 1<<20 {
		return
	}
	o.pending, o.stack = Shed(o.pending, keepScratch), Shed(o.stack, keepScratch)
	o.keys = Shed(o.keys, keepScratch)
	o.Gone = Shed(o.Gone, keepScratch)
	o.checkKids, o.checkOver = Shed(o.checkKids, 1<<20), Shed(o.checkOver, 1<<20)
}

// Shed returns s, or nil when its buffer holds more than keep elements.
func Shed[T any](s []T, keep int) []T {
	if cap(s) > keep {
		return nil
	}
	return s
}
