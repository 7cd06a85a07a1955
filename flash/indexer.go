package flash

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/flashindexer/flashindexer/arena"
	"github.com/flashindexer/flashindexer/asm"
	"github.com/flashindexer/flashindexer/bitset"
	"github.com/flashindexer/flashindexer/internal/entry"
	"github.com/flashindexer/flashindexer/internal/search"
	"github.com/flashindexer/flashindexer/internal/slots"
	"github.com/flashindexer/flashindexer/shardmap"
)

// Indexer is the Flash index: an exact positional index of every worker's
// cached blocks with lock-free jump-search queries. Build it with New.
//
// Events go to the writer that owns their worker (sticky by worker ID), so
// one worker's events apply in order and its private state has one owner.
// The shared index is a shardmap from (position, sequence hash) to the set
// of workers that hold that content (internal/entry);
// with WithLaneTables each lane has such a table for its own workers.
type Indexer struct {
	cfg  Config
	jump int
	bw   int // words per worker set
	// sets: how the shared entries keep worker sets (internal/entry):
	// inline in the table's values, or in arena slots.
	sets entry.Sets
	// tabs: the shared table, or one per lane (WithLaneTables); a query
	// searches each.
	tabs  []*shardmap.Map
	lanes []*lane
	sync  bool

	closed    atomic.Bool
	admission tally
	queries   [queryStripes]stripe

	search search.Index // what queries read

	workersMu sync.Mutex                       // intern, release
	slots     *slots.Table                     // who holds each worker slot
	directory atomic.Pointer[map[Worker]int32] // copy-on-write

	onReject func(ev *Event, err error)
	onGap    func(w Worker, expected, got uint64) // nil: ids not tracked
	capacity func(w Worker) int                   // nil: no hints
	k0, k1   uint64                               // keys of the private maps' hash
	stopped  sync.WaitGroup
}

var _ Index = (*Indexer)(nil)

// queryStripes spreads the query counters over cache lines so concurrent
// readers do not bounce one line; a query picks its stripe from the address
// of its Scores.
const queryStripes = 16

type stripe struct {
	queries, blocks atomic.Uint64
	_               [64 - 16]byte
}

// shardBits picks the shards per position of the shared table: shards only
// keep writers off each other's locks, and each splits a position's keys
// into one more table, allocated and grown on its own; so one lane gets one
// shard (and takes no locks), and more lanes get about one shard each, up
// to shardmap.DefaultShardBits.
func shardBits(lanes int) uint {
	return min(uint(bits.Len(uint(max(lanes, 1)-1))), shardmap.DefaultShardBits)
}

// New returns an empty index. By default events apply on DefaultWriters()
// pinned writer goroutines; WithWriters(0) makes it synchronous.
func New(opts ...Option) *Indexer {
	s := defaults()
	for _, o := range opts {
		o(&s)
	}
	s.cfg = s.cfg.Normalize()
	bw := bitset.Words(s.cfg.MaxWorkers)
	var key [16]byte
	_, _ = rand.Read(key[:])
	ix := &Indexer{
		cfg:      s.cfg,
		jump:     s.jump,
		bw:       bw,
		sync:     s.writers == 0,
		slots:    slots.New(s.cfg.MaxWorkers),
		onReject: s.onReject,
		onGap:    s.onGap,
		capacity: s.capacity,
		k0:       binary.LittleEndian.Uint64(key[:8]),
		k1:       binary.LittleEndian.Uint64(key[8:]),
	}
	ix.sets = entry.Sets{Arena: arena.New(bw), Inline: bw == 1, Wide: asm.UseKernel(bw)}
	ix.directory.Store(&map[Worker]int32{})
	n := s.lanes()
	if s.laneTables && n > 1 {
		for range n {
			ix.tabs = append(ix.tabs, shardmap.New(shardmap.WithShardBits(0)))
		}
	} else {
		ix.tabs = []*shardmap.Map{shardmap.New(shardmap.WithShardBits(shardBits(n)))}
	}
	ix.search = search.Index{Sets: ix.sets, Tabs: ix.tabs, Slots: ix.slots, Jump: ix.jump, Words: bw, BlockSize: s.cfg.BlockSize}
	var cpus []int
	if !ix.sync && s.pin {
		cpus = planCPUs(n)
	}
	for i := 0; i < n; i++ {
		ln := newLane(ix, i, s.queue)
		// A lane with a table of its own, or the only lane, is its table's
		// single writer.
		ln.own.W.Tab, ln.own.W.Excl = ix.tabs[min(i, len(ix.tabs)-1)], len(ix.tabs) > 1 || n == 1
		ix.lanes = append(ix.lanes, ln)
		if !ix.sync {
			cpu := -1
			if i < len(cpus) {
				cpu = cpus[i]
			}
			ix.stopped.Add(1)
			go ln.run(cpu)
		}
	}
	return ix
}

// LaneTables reports whether each lane has a shared table of its own
// (WithLaneTables with more than one lane).
func (ix *Indexer) LaneTables() bool { return len(ix.tabs) > 1 }

// Config returns the index's settings.
func (ix *Indexer) Config() Config { return ix.cfg }

// JumpSize returns the distance between jump-search checkpoints.
func (ix *Indexer) JumpSize() int { return ix.jump }

// Writers returns the number of writer goroutines (0: synchronous).
func (ix *Indexer) Writers() int {
	if ix.sync {
		return 0
	}
	return len(ix.lanes)
}

// Lanes returns the number of lanes: the writer goroutines, or the lanes of
// a synchronous index (WithSyncLanes).
func (ix *Indexer) Lanes() int { return len(ix.lanes) }

// LaneOf returns the lane, in [0, Lanes()), that applies the events of every
// worker with this ID (all its DP ranks). Callers that apply events from
// several goroutines, one per lane, never wait for each other's lanes.
func (ix *Indexer) LaneOf(id uint64) int { return ix.laneOf(id).id }

func (ix *Indexer) laneOf(id uint64) *lane {
	if len(ix.lanes) == 1 {
		return ix.lanes[0]
	}
	return ix.lanes[LaneFor(id, len(ix.lanes))]
}

// LaneFor returns the lane, in [0, lanes), of worker ID id in an index of
// that many lanes (what LaneOf answers): the golden-ratio multiple of the ID
// spreads consecutive IDs evenly over [0, 2^64), and the high word of its
// product with the lane count picks the lane. Callers that split workers
// over goroutines for any index can use it too.
func LaneFor(id uint64, lanes int) int {
	l, _ := bits.Mul64(id*0x9E3779B97F4A7C15, uint64(max(lanes, 1)))
	return int(l)
}

func (ix *Indexer) reject(ev *Event, err error, c *tally) error {
	c.reject(ev.Kind, err)
	if ix.onReject != nil {
		ix.report(*ev, err)
	}
	return err
}

// report hands the reject handler a copy, so that events on the accepted
// path never escape to the heap.
func (ix *Indexer) report(ev Event, err error) { ix.onReject(&ev, err) }

// Apply hands ev to its worker's writer (or applies it at once when the
// index is synchronous). It copies ev: the caller may reuse its slices.
// With writers, a full queue blocks until there is room; Apply returns only
// admission errors (ErrClosed, ErrEmptyEvent, ErrBatchTooLarge, ErrBadKind)
// and the rest is counted in Stats and reported to the reject handler.
func (ix *Indexer) Apply(ev Event) error { return ix.apply(&ev, false) }

// TryApply is Apply that returns ErrQueueFull instead of waiting for room.
func (ix *Indexer) TryApply(ev Event) error { return ix.apply(&ev, true) }

func (ix *Indexer) apply(ev *Event, try bool) error {
	if err := ix.cfg.CheckEvent(ev); err != nil {
		return ix.reject(ev, err, &ix.admission)
	}
	ln := ix.laneOf(ev.Worker.ID)
	if ix.sync {
		ln.mu.Lock()
		defer ln.mu.Unlock()
		if ix.closed.Load() {
			return ix.reject(ev, ErrClosed, &ix.admission)
		}
		return ln.apply(ev)
	}
	return ln.enqueue(ev, nil, try)
}

// RemoveWorker drops every DP rank of worker id and frees their slots. With
// writers, it is ordered with the worker's events and applied by its writer.
func (ix *Indexer) RemoveWorker(id uint64) error {
	ln := ix.laneOf(id)
	if ix.sync {
		ln.mu.Lock()
		defer ln.mu.Unlock()
		if ix.closed.Load() {
			ix.admission.reject(0, ErrClosed)
			return ErrClosed
		}
		ln.removeWorker(id)
		return nil
	}
	return ln.enqueue(nil, &id, false)
}

// Flush returns once every event accepted before the call is applied.
func (ix *Indexer) Flush() {
	if ix.sync {
		return
	}
	for _, ln := range ix.lanes {
		ln.ring.Flush()
	}
}

// Close applies every accepted event, stops the writers and rejects later
// events with ErrClosed. Queries keep answering from the final state.
func (ix *Indexer) Close() error {
	if ix.closed.Swap(true) {
		return ErrClosed
	}
	if !ix.sync {
		for _, ln := range ix.lanes {
			ln.ring.Stop()
		}
		ix.stopped.Wait()
	}
	return nil
}

// Stats returns the index's counters.
func (ix *Indexer) Stats() Stats {
	var s Stats
	ix.admission.addTo(&s)
	for _, ln := range ix.lanes {
		ln.counters.addTo(&s)
	}
	for i := range ix.queries {
		s.Queries += ix.queries[i].queries.Load()
		s.QueryBlocks += ix.queries[i].blocks.Load()
	}
	s.EventsApplied = s.StoredApplied + s.RemovedApplied + s.Clears
	return s
}

// BlockCount returns how many blocks (engine ids) w holds. Lock-free.
func (ix *Indexer) BlockCount(w Worker) int {
	slot, ok := (*ix.directory.Load())[w]
	if !ok {
		return 0
	}
	return ix.slots.Blocks(int(slot))
}

// WorkerBlocks calls f with every worker that holds a slot and the number of
// blocks it holds, from one lock-free snapshot of the worker directory, in no
// particular order. It is meant for metrics; f must not call back into the
// index's write path.
func (ix *Indexer) WorkerBlocks(f func(w Worker, blocks int)) {
	for w, slot := range *ix.directory.Load() {
		f(w, ix.slots.Blocks(int(slot)))
	}
}

// QueueDepths appends to dst the number of events waiting in each writer's
// queue (or being applied), one entry per writer, and returns it. A
// synchronous index has no queues: it returns dst unchanged.
func (ix *Indexer) QueueDepths(dst []int) []int {
	if ix.sync {
		return dst
	}
	for _, ln := range ix.lanes {
		dst = append(dst, ln.ring.Len())
	}
	return dst
}

// Workers returns how many workers hold a slot.
func (ix *Indexer) Workers() int { return len(*ix.directory.Load()) }

// intern gives w a worker slot.
func (ix *Indexer) intern(w Worker) (int, error) {
	ix.workersMu.Lock()
	defer ix.workersMu.Unlock()
	slot, ok := ix.slots.Take(w.ID, w.DPRank)
	if !ok {
		return 0, ErrTooManyWorkers
	}
	old := *ix.directory.Load()
	dir := make(map[Worker]int32, len(old)+1)
	for k, v := range old {
		dir[k] = v
	}
	dir[w] = int32(slot)
	ix.directory.Store(&dir)
	return slot, nil
}

// release frees w's slot. Its bits must be clear already.
func (ix *Indexer) release(w Worker, slot int) {
	ix.workersMu.Lock()
	defer ix.workersMu.Unlock()
	ix.slots.Give(slot)
	old := *ix.directory.Load()
	dir := make(map[Worker]int32, len(old))
	for k, v := range old {
		if k != w {
			dir[k] = v
		}
	}
	ix.directory.Store(&dir)
}
