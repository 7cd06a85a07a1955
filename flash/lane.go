package flash

import (
	"context"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/flashindexer/flashindexer/affinity"
	"github.com/flashindexer/flashindexer/internal/entry"
	"github.com/flashindexer/flashindexer/internal/worker"
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
	own      worker.Owner // its workers' entry writer, map keys and scratch
	workers  map[Worker]*worker.State
	counters Counters
	nextID   map[Worker]uint64 // event id tracking: the id expected next

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

func newLane(ix *Indexer, id, queue int) *lane {
	ln := &lane{ix: ix, id: id, workers: map[Worker]*worker.State{}}
	ln.own.W = entry.Writer{Sets: &ix.sets, Alloc: ix.sets.Arena.NewAllocator()}
	ln.own.K0, ln.own.K1 = ix.k0, ix.k1
	if ix.capacity != nil {
		ln.own.Hint = func(id uint64, rank uint32) int { return ix.capacity(Worker{ID: id, DPRank: rank}) }
	}
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
	ws := ln.workers[ev.Worker]
	switch ev.Kind {
	case KindStored:
		ws, err = ln.store(ws, ev)
	case KindRemoved:
		if ws == nil {
			ln.counters.Add(CounterRemovesUnknown, uint64(len(ev.Hashes)))
			break
		}
		removed := ln.own.Remove(ws, hashesOf(ev.Hashes))
		ln.counters.Add(CounterBlocksRemoved, uint64(removed))
		ln.counters.Add(CounterRemovesUnknown, uint64(len(ev.Hashes)-removed))
	case KindCleared:
		if ws != nil {
			ln.own.Clear(ws)
		}
	default:
		err = ErrBadKind
	}
	if ws != nil && ws.Slot >= 0 {
		ln.ix.info[ws.Slot].blocks.Store(int64(ws.Blocks()))
		ln.own.Check(ws)
	}
	ln.own.TrimScratch()
	if err != nil {
		return ln.ix.reject(ev, err, &ln.counters)
	}
	ln.counters.Applied(ev.Kind)
	return nil
}

// store validates a Stored event whole, then applies it; a worker seen for
// the first time gets its state here, and a slot only once the batch is
// valid. It returns the worker's state (nil if it has none).
func (ln *lane) store(ws *worker.State, ev *Event) (*worker.State, error) {
	fresh := ws == nil
	if fresh {
		if ev.HasParent {
			return nil, ErrUnknownParent
		}
		ws = ln.own.New(ev.Worker.ID, ev.Worker.DPRank, -1)
	}
	if err := ln.own.Prepare(ws, uint64(ev.Parent), ev.HasParent, blocksOf(ev.Blocks), ln.ix.cfg.MaxDepth); err != nil {
		if fresh {
			return nil, err
		}
		return ws, err
	}
	if fresh {
		slot, err := ln.ix.intern(ev.Worker)
		if err != nil {
			return nil, err // the new state is dropped, its claims with it
		}
		ws.Slot = slot
		ln.workers[ev.Worker] = ws
	}
	stored, dup := ln.own.Commit(ws)
	ln.counters.Add(CounterBlocksStored, uint64(stored))
	ln.counters.Add(CounterBlocksDuplicate, uint64(dup))
	return ws, nil
}

// blocksOf views blocks as the worker package's: one layout, two words
// (TestLayout checks it).
func blocksOf(b []Block) []worker.Block {
	return unsafe.Slice((*worker.Block)(unsafe.Pointer(unsafe.SliceData(b))), len(b))
}

// hashesOf views engine ids as words.
func hashesOf(h []ExternalHash) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(h))), len(h))
}

func (ln *lane) removeWorker(id uint64) {
	removed := false
	for w, ws := range ln.workers {
		if w.ID != id {
			continue
		}
		ln.own.Clear(ws)
		ln.ix.release(w, ws.Slot)
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
