package flash

import (
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"time"
	"unsafe"

	"github.com/flashindexer/flashindexer/bitset"
	"github.com/flashindexer/flashindexer/flash/internal/entry"
	"github.com/flashindexer/flashindexer/flash/internal/lane"
	"github.com/flashindexer/flashindexer/flash/internal/search"
	"github.com/flashindexer/flashindexer/flash/internal/slotdir"
)

// Indexer is the Flash index: an exact positional index of every worker's
// cached blocks with lock-free jump-search queries. Build it with New.
type Indexer struct {
	cfg    Config
	jump   int
	sync   bool
	sets   entry.Sets   // how the shared entries keep worker sets
	search search.Index // what queries read
	lanes  *lane.Set    // what applies events
}

var (
	_ Predictor   = (*Indexer)(nil)
	_ WorkerAdder = (*Indexer)(nil)
)

// New returns an empty index. By default events apply on DefaultWriters()
// pinned writer goroutines; WithWriters(0) makes it synchronous.
func New(opts ...Option) *Indexer {
	s := defaults()
	for _, o := range opts {
		o(&s)
	}
	s.cfg = s.cfg.Normalize()
	// Each worker has a place per tier in the shared sets (slotdir).
	tiers := s.cfg.NumTiers()
	s.cfg.MaxWorkers = min(s.cfg.MaxWorkers, MaxWorkersLimit/tiers)
	bw := bitset.Words(s.cfg.MaxWorkers * tiers)
	var key [16]byte
	_, _ = rand.Read(key[:])
	ix := &Indexer{cfg: s.cfg, jump: s.jump, sync: s.writers == 0}
	// Up to maxPlanes words of workers, a table per 64 worker slots (a
	// plane) keeps every set one word in its table's values: a store touches
	// one line, where a wide set past a list is a second random line.
	planes := 1
	if bw > 1 && bw <= maxPlanes {
		planes, bw = bw, 1
	}
	ix.sets = entry.New(s.cfg.MaxWorkers*tiers, bw)
	n := cmp.Or(s.writers, s.syncLanes)
	o := lane.Options{
		Lanes: n, Sync: ix.sync, Queue: s.queue, Pin: s.pin, Reserve: s.reserve, Tiers: tiers,
		MaxDepth: s.cfg.MaxDepth, MaxBatch: s.cfg.MaxBatch, MaxPredicted: s.cfg.MaxPredicted, Clock: s.cfg.Clock,
		Sets: &ix.sets, Tabs: lane.Tables(n, planes, s.laneTables, !ix.sets.Inline), Preds: lane.Tables(n, planes, s.laneTables, !ix.sets.Inline), Planes: planes, Dir: slotdir.New(s.cfg.MaxWorkers, tiers),
		K0: binary.LittleEndian.Uint64(key[:8]), K1: binary.LittleEndian.Uint64(key[8:]),
	}
	if f := s.onReject; f != nil {
		o.OnReject = func(ev *lane.Event, err error) { f((*Event)(unsafe.Pointer(ev)), err) }
	}
	if f := s.onGap; f != nil {
		o.OnGap = func(w lane.Worker, expected, got uint64) { f(Worker(w), expected, got) }
	}
	if f := s.capacity; f != nil {
		o.Capacity = func(w lane.Worker) int { return f(Worker(w)) }
	}
	ix.lanes = lane.New(o)
	ix.search = search.Index{Sets: ix.sets, Tabs: o.Tabs, Planes: planes, Preds: o.Preds, Predicted: ix.lanes.Predicted(),
		Dir: o.Dir, Jump: ix.jump, Words: bw, BlockSize: s.cfg.BlockSize, Tiers: tiers}
	return ix
}

// maxPlanes: fleets of up to 128 workers get a table per 64 (a plane);
// wider ones keep the wide form (entry.Sets): a query searches every plane.
const maxPlanes = 2

// LaneTables reports whether each lane has a shared table of its own
// (WithLaneTables with more than one lane).
func (ix *Indexer) LaneTables() bool { return len(ix.search.Tabs) > max(ix.search.Planes, 1) }

// Config returns the index's settings.
func (ix *Indexer) Config() Config { return ix.cfg }

// JumpSize returns the distance between jump-search checkpoints.
func (ix *Indexer) JumpSize() int { return ix.jump }

// Writers returns the number of writer goroutines (0: synchronous).
func (ix *Indexer) Writers() int {
	if ix.sync {
		return 0
	}
	return ix.lanes.Lanes()
}

// Lanes returns the number of lanes: the writer goroutines, or the lanes of
// a synchronous index (WithSyncLanes).
func (ix *Indexer) Lanes() int { return ix.lanes.Lanes() }

// LaneOf returns the lane, in [0, Lanes()), that applies the events of every
// worker with this ID (all its DP ranks). Callers that apply events from
// several goroutines, one per lane, never wait for each other's lanes.
func (ix *Indexer) LaneOf(id uint64) int { return ix.lanes.LaneOf(id) }

// LaneFor returns the lane, in [0, lanes), of worker ID id in an index of
// that many lanes (what LaneOf answers), for callers that split workers
// over goroutines.
func LaneFor(id uint64, lanes int) int { return lane.For(id, lanes) }

// Apply hands ev to its worker's writer (or applies it at once when the
// index is synchronous). It copies ev: the caller may reuse its slices.
// With writers, a full queue blocks until there is room; Apply returns only
// admission errors (ErrClosed, ErrEmptyEvent, ErrBatchTooLarge, ErrBadKind)
// and the rest is counted in Stats and reported to the reject handler.
func (ix *Indexer) Apply(ev Event) error {
	return ix.lanes.Apply((*lane.Event)(unsafe.Pointer(&ev)), false)
}

// TryApply is Apply that returns ErrQueueFull instead of waiting for room.
func (ix *Indexer) TryApply(ev Event) error {
	return ix.lanes.Apply((*lane.Event)(unsafe.Pointer(&ev)), true)
}

// Predict records that w will hold the blocks of q until ttl from now
// (Predictor; the package documentation, Predictions), ordered with w's events.
func (ix *Indexer) Predict(w Worker, q Query, ttl time.Duration) error {
	return ix.lanes.Predict(lane.Worker(w), view[uint64](q.Locals), ttl)
}

// AddWorker gives w a slot and its state (made for its capacity with
// WithReservedCapacity) ahead of its first event (WorkerAdder), keeping
// that work and its allocations off the event path. With writers, it is
// ordered with w's events and returns once w's writer has applied it.
func (ix *Indexer) AddWorker(w Worker) error { return ix.lanes.AddWorker(lane.Worker(w)) }

// RemoveWorker drops every DP rank of worker id and frees their slots. With
// writers, it is ordered with the worker's events and applied by its writer.
func (ix *Indexer) RemoveWorker(id uint64) error { return ix.lanes.RemoveWorker(id) }

// Flush returns once every event accepted before the call is applied.
func (ix *Indexer) Flush() { ix.lanes.Flush() }

// Close applies every accepted event, stops the writers and rejects later
// events with ErrClosed. Queries keep answering from the final state.
func (ix *Indexer) Close() error { return ix.lanes.Close() }

// Stats returns the index's counters.
func (ix *Indexer) Stats() Stats {
	var c lane.Counts
	ix.lanes.Counts(&c)
	c[lane.Queries], c[lane.QueryBlocks], c[lane.QueryHits], c[lane.QueryMatchedBlocks] = ix.search.Tally.Sum()
	return *(*Stats)(unsafe.Pointer(&c))
}

// BlockCount returns how many blocks (engine ids) w holds. Lock-free.
func (ix *Indexer) BlockCount(w Worker) int {
	slot, ok := ix.lanes.Directory().Slot(lane.Worker(w))
	if !ok {
		return 0
	}
	return ix.search.Dir.Blocks(int(slot))
}

// WorkerBlocks calls f with every worker that holds a slot and its blocks,
// in the order of their IDs and ranks, from one lock-free snapshot (for
// metrics; f must not call back into the index's write path).
func (ix *Indexer) WorkerBlocks(f func(w Worker, blocks int)) {
	for e := range ix.lanes.Directory().All() {
		f(Worker(e.W), ix.search.Dir.Blocks(int(e.Slot)))
	}
}

// QueueDepths appends to dst the events waiting in (or being applied from)
// each writer's queue; a synchronous index has none: dst comes back as is.
func (ix *Indexer) QueueDepths(dst []int) []int { return ix.lanes.QueueDepths(dst) }

// Workers returns how many workers hold a slot.
func (ix *Indexer) Workers() int { return ix.lanes.Directory().Len() }

// HasWorker reports whether w holds a slot: its events, a prediction or
// AddWorker gave it one, and RemoveWorker has not taken it. It takes no
// lock and allocates nothing.
func (ix *Indexer) HasWorker(w Worker) bool {
	_, ok := ix.lanes.Directory().Slot(lane.Worker(w))
	return ok
}
