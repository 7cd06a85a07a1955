package flash

import (
	"context"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flashindexer/flashindexer/affinity"
	"github.com/flashindexer/flashindexer/arena"
	"github.com/flashindexer/flashindexer/shardmap"
)

// planCPUs picks CPUs for n pinned writers.
func planCPUs(n int) []int { return affinity.Plan(n) }

// lane is one writer: the private state of the workers it owns, its arena
// allocator, its counters, and (with writer goroutines) its event queue.
//
// The queue is a ring of items with counters head ≤ tail (never wrapped:
// an item's place is its counter modulo the ring's length). Its protocol:
//
//   - Producers (enqueue) MUST hold mu to copy an event into ring[tail] and
//     advance tail; they wait on notFull while tail-head is the ring's
//     length (TryApply refuses instead). Once Close began, nothing is
//     added.
//   - The writer alone reads items in [head, tail): it takes end = tail
//     under mu, applies [head, end) without the lock, then advances head
//     to end under mu. Items in [head, end) MUST NOT be written by anyone
//     else meanwhile, which holds because producers write only at tail and
//     tail-head never passes the ring's length.
//   - An applied item keeps no reference to the caller's slices (release),
//     and buffers over keepBlocks are dropped, so the ring holds at most
//     queue × keepBlocks blocks between bursts.
//   - Flush returns once head reaches the tail it saw: every event accepted
//     before the call has been applied. The writer parks on notEmpty only
//     with mu held and head == tail, after idleSpin of watching queued.
//   - In synchronous mode there is no ring: mu is the lane, held for each
//     event.
type lane struct {
	ix       *Indexer
	id       int
	alloc    *arena.Allocator
	tab      *shardmap.Map // the shared table it writes: the index's, or its own
	excl     bool          // no other lane writes tab: no shard locks
	workers  map[Worker]*workerState
	counters Counters
	pending  []pendingBlock    // scratch: one event's validated blocks
	stack    []uint32          // scratch: subtree walks
	nextID   map[Worker]uint64 // event id tracking: the id expected next
	// checkKids is the invariant checks' scratch (flash_invariants builds
	// only; nil otherwise).
	checkKids []uint32
	checkOver []int

	mu sync.Mutex // the queue; in synchronous mode, the whole lane
	// ring holds queued items; [head, tail) are waiting or being applied.
	ring       []item
	head, tail uint64
	queued     atomic.Uint64 // tail, for the idle writer to watch without the lock
	parked     bool          // the writer waits on notEmpty
	stopping   bool
	producers  int // goroutines waiting on notFull
	flushers   int // goroutines waiting on drained
	notEmpty   sync.Cond
	notFull    sync.Cond
	drained    sync.Cond
}

// item is a queued event (or RemoveWorker) with its own copies of the
// event's slices, reused from one lap of the ring to the next.
type item struct {
	ev       Event
	blocks   []Block
	hashes   []ExternalHash
	removeID uint64
	remove   bool
	fn       func() // a call run on the writer between events (Dump, Restore)
}

// keepBlocks: a queue slot keeps its copies' buffers for the next lap up
// to this many blocks (and as many hashes); a larger event's buffers go with
// it, so a burst of large events leaves the ring at most queue × 6 KiB.
const keepBlocks = 256

// release drops the applied event's references, and its buffers when they
// are larger than a slot keeps. The writer owns the item until it advances
// head.
func (it *item) release() {
	it.blocks, it.hashes = shed(it.blocks, keepBlocks), shed(it.hashes, keepBlocks)
	it.ev = Event{}
}

// shed returns s, or nil when its buffer holds more than keep elements.
func shed[T any](s []T, keep int) []T {
	if cap(s) > keep {
		return nil
	}
	return s
}

type pendingBlock struct {
	seq  SeqHash
	node uint32 // the worker's node of a duplicate
	dup  bool
	slot int // a new block's engine id's slot in the worker's map
}

func newLane(ix *Indexer, id, queue int) *lane {
	ln := &lane{ix: ix, id: id, alloc: ix.ar.NewAllocator(), workers: map[Worker]*workerState{}}
	if !ix.sync {
		ln.ring = make([]item, queue)
	}
	ln.notEmpty.L, ln.notFull.L, ln.drained.L = &ln.mu, &ln.mu, &ln.mu
	return ln
}

// enqueue copies an event (or a RemoveWorker of *removeID, or a call of fn)
// into the ring.
func (ln *lane) enqueue(ev *Event, removeID *uint64, try bool) error {
	return ln.enqueueItem(ev, removeID, nil, try)
}

func (ln *lane) enqueueItem(ev *Event, removeID *uint64, fn func(), try bool) error {
	ix := ln.ix
	ln.mu.Lock()
	for {
		if ln.stopping || ix.closed.Load() {
			ln.mu.Unlock()
			if fn != nil {
				return ErrClosed
			}
			if ev == nil {
				ix.admission.Reject(ErrClosed)
				return ErrClosed
			}
			return ix.reject(ev, ErrClosed, &ix.admission)
		}
		if ln.tail-ln.head < uint64(len(ln.ring)) {
			break
		}
		if try {
			ln.mu.Unlock()
			if ev == nil {
				ix.admission.Reject(ErrQueueFull)
				return ErrQueueFull
			}
			return ix.reject(ev, ErrQueueFull, &ix.admission)
		}
		ln.producers++
		ln.notFull.Wait()
		ln.producers--
	}
	it := &ln.ring[ln.tail%uint64(len(ln.ring))]
	it.fn = fn
	switch {
	case ev != nil:
		it.remove = false
		it.ev = *ev
		it.blocks = append(it.blocks[:0], ev.Blocks...)
		it.hashes = append(it.hashes[:0], ev.Hashes...)
		it.ev.Blocks, it.ev.Hashes = it.blocks, it.hashes
	case removeID != nil:
		it.remove, it.removeID = true, *removeID
	}
	ln.tail++
	ln.queued.Store(ln.tail)
	if ln.parked {
		ln.notEmpty.Signal()
	}
	ln.mu.Unlock()
	return nil
}

// idleSpin: a writer that finds its queue empty watches it for this long
// before parking, so a steady stream of events does not pay a futex wake
// and an OS thread switch per event (a writer is locked to its thread, so
// yielding to the Go scheduler would switch threads too); an idle writer
// then sleeps and uses no CPU. 20 µs is a few events' spacing at the
// event rates of a busy router, and a small fraction of a core when idle
// between bursts.
const idleSpin = 20 * time.Microsecond

// run is the writer goroutine.
func (ln *lane) run(cpu int) {
	defer ln.ix.stopped.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cpu >= 0 {
		_ = affinity.Pin(cpu) // best effort: not permitted is fine
	}
	labels := pprof.Labels("flash", "writer", "lane", strconv.Itoa(ln.id))
	pprof.Do(context.Background(), labels, func(context.Context) { ln.loop() })
}

func (ln *lane) loop() {
	ln.mu.Lock()
	for {
		if ln.head == ln.tail && !ln.stopping {
			head := ln.head
			ln.mu.Unlock()
			for t0 := time.Now(); ln.queued.Load() == head && time.Since(t0) < idleSpin; {
				for i := 0; i < 64 && ln.queued.Load() == head; i++ {
				}
			}
			ln.mu.Lock()
		}
		for ln.head == ln.tail && !ln.stopping {
			ln.parked = true
			ln.notEmpty.Wait()
			ln.parked = false
		}
		if ln.head == ln.tail { // stopping, queue drained
			ln.drained.Broadcast()
			ln.notFull.Broadcast()
			ln.mu.Unlock()
			return
		}
		end := ln.tail
		ln.mu.Unlock()
		for i := ln.head; i < end; i++ {
			it := &ln.ring[i%uint64(len(ln.ring))]
			switch {
			case it.fn != nil:
				it.fn()
				it.fn = nil
			case it.remove:
				ln.removeWorker(it.removeID)
			default:
				_ = ln.apply(&it.ev)
				it.release()
			}
		}
		ln.mu.Lock()
		ln.head = end
		if ln.flushers > 0 {
			ln.drained.Broadcast()
		}
		if ln.producers > 0 {
			ln.notFull.Broadcast()
		}
	}
}

// call runs fn with the lane owned: on the writer between two events, or
// under the lane's lock in synchronous mode, or directly once the writers
// have stopped (the state is final then).
func (ln *lane) call(fn func()) {
	if ln.ix.sync {
		ln.mu.Lock()
		defer ln.mu.Unlock()
		fn()
		return
	}
	if ln.callOpen(fn) != nil {
		ln.ix.stopped.Wait()
		fn()
	}
}

// callOpen runs fn with the lane owned, as call does, while the index is
// open: a change (Restore) that Close overtakes returns ErrClosed and leaves
// the lane as Close left it. With writers, fn runs if it was queued before
// Close (Close applies everything accepted).
func (ln *lane) callOpen(fn func()) error {
	if ln.ix.sync {
		ln.mu.Lock()
		defer ln.mu.Unlock()
		if ln.ix.closed.Load() {
			return ErrClosed
		}
		fn()
		return nil
	}
	done := make(chan struct{})
	if err := ln.enqueueItem(nil, nil, func() { fn(); close(done) }, false); err != nil {
		return err
	}
	<-done
	return nil
}

func (ln *lane) flush() {
	ln.mu.Lock()
	target := ln.tail
	for ln.head < target {
		ln.flushers++
		ln.drained.Wait()
		ln.flushers--
	}
	ln.mu.Unlock()
}

func (ln *lane) stop() {
	ln.mu.Lock()
	ln.stopping = true
	ln.notEmpty.Signal()
	ln.notFull.Broadcast()
	ln.mu.Unlock()
}

// keepScratch: a lane's scratch buffers for one event stay between events up
// to this many entries; a larger event's go with it.
const keepScratch = 4096

// trimScratch releases scratch buffers that one large event grew.
func (ln *lane) trimScratch() {
	ln.pending, ln.stack = shed(ln.pending, keepScratch), shed(ln.stack, keepScratch)
	ln.checkKids, ln.checkOver = shed(ln.checkKids, 1<<20), shed(ln.checkOver, 1<<20)
}

// trackID checks ev's id against its worker's sequence.
func (ln *lane) trackID(ev *Event) {
	next, seen := ln.nextID[ev.Worker]
	if ln.nextID == nil {
		ln.nextID = map[Worker]uint64{}
	}
	ln.nextID[ev.Worker] = ev.ID + 1
	if !seen || ev.ID == next {
		return
	}
	if ev.ID > next {
		ln.counters.Add(CounterEventGaps, 1)
	} else {
		ln.counters.Add(CounterEventRestarts, 1)
	}
	ln.ix.onGap(ev.Worker, next, ev.ID)
}

// apply applies one event to the lane's state. The caller owns the lane.
func (ln *lane) apply(ev *Event) error {
	if ln.ix.onGap != nil {
		ln.trackID(ev)
	}
	var err error
	switch ev.Kind {
	case KindStored:
		err = ln.store(ev)
	case KindRemoved:
		if ws := ln.workers[ev.Worker]; ws != nil {
			ln.remove(ws, ev.Hashes)
		} else {
			ln.counters.Add(CounterRemovesUnknown, uint64(len(ev.Hashes)))
		}
	case KindCleared:
		if ws := ln.workers[ev.Worker]; ws != nil {
			ln.clear(ws)
		}
	default:
		err = ErrBadKind
	}
	if invariants {
		ln.checkWorker(ln.workers[ev.Worker])
	}
	ln.trimScratch()
	if err != nil {
		return ln.ix.reject(ev, err, &ln.counters)
	}
	ln.counters.Applied(ev.Kind)
	return nil
}

func (ln *lane) removeWorker(id uint64) {
	removed := false
	for w, ws := range ln.workers {
		if w.ID != id {
			continue
		}
		ln.clear(ws)
		ln.ix.release(w, ws.slot)
		delete(ln.workers, w)
		removed = true
	}
	for w := range ln.nextID {
		if w.ID == id {
			delete(ln.nextID, w)
		}
	}
	if removed {
		ln.counters.Add(CounterWorkersRemoved, 1)
	}
}
