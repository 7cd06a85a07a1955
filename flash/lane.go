package flash

import (
	"sync"
	"unsafe"

	"github.com/flashindexer/flashindexer/affinity"
	"github.com/flashindexer/flashindexer/internal/entry"
	"github.com/flashindexer/flashindexer/internal/ring"
	"github.com/flashindexer/flashindexer/internal/worker"
)

// planCPUs picks CPUs for n pinned writers.
func planCPUs(n int) []int { return affinity.Plan(n) }

// lane is one writer: the private state of the workers it owns, its arena
// allocator, its counters, and (with writer goroutines) its event queue, a
// ring (internal/ring) of items. An applied item keeps no reference to the
// caller's slices (release), and buffers over keepBlocks are dropped, so
// the ring holds at most queue × keepBlocks blocks between bursts. In
// synchronous mode there is no ring: mu is the lane, held for each event.
type lane struct {
	ix       *Indexer
	id       int
	own      worker.Owner // its workers' entry writer, map keys and scratch
	workers  map[Worker]*worker.State
	counters tally
	nextID   map[Worker]uint64 // event id tracking: the id expected next
	mu       sync.Mutex        // synchronous mode: the lane
	ring     ring.Ring[item]
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
	it.blocks, it.hashes = worker.Shed(it.blocks, keepBlocks), worker.Shed(it.hashes, keepBlocks)
	it.ev = Event{}
}

func newLane(ix *Indexer, id, queue int) *lane {
	ln := &lane{ix: ix, id: id, workers: map[Worker]*worker.State{}}
	ln.own.W = entry.Writer{Sets: &ix.sets, Alloc: ix.sets.Arena.NewAllocator()}
	ln.own.K0, ln.own.K1 = ix.k0, ix.k1
	if ix.capacity != nil {
		ln.own.Hint = func(id uint64, rank uint32) int { return ix.capacity(Worker{ID: id, DPRank: rank}) }
	}
	if !ix.sync {
		ln.ring.Init(queue, &ix.closed)
	}
	return ln
}

// enqueue copies an event (or a RemoveWorker of *removeID, or a call of fn)
// into the ring.
func (ln *lane) enqueue(ev *Event, removeID *uint64, try bool) error {
	return ln.enqueueItem(ev, removeID, nil, try)
}

func (ln *lane) enqueueItem(ev *Event, removeID *uint64, fn func(), try bool) error {
	ix := ln.ix
	it, err := ln.ring.Reserve(try)
	if err != nil {
		if err == ring.ErrFull {
			err = ErrQueueFull
		} else {
			err = ErrClosed
		}
		switch {
		case fn != nil:
		case ev == nil:
			ix.admission.reject(0, err)
		default:
			ix.reject(ev, err, &ix.admission)
		}
		return err
	}
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
	ln.ring.Commit()
	return nil
}

// run is the writer goroutine.
func (ln *lane) run(cpu int) {
	defer ln.ix.stopped.Done()
	ln.ring.Serve(cpu, ln.id, ln.applyItem)
}

// applyItem applies one queued item on the writer.
func (ln *lane) applyItem(it *item) {
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
		ln.counters.add(unsafe.Offsetof(Stats{}.EventGaps), 1)
	} else {
		ln.counters.add(unsafe.Offsetof(Stats{}.EventRestarts), 1)
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
			ln.counters.add(unsafe.Offsetof(Stats{}.RemovesUnknown), uint64(len(ev.Hashes)))
			break
		}
		removed := ln.own.Remove(ws, view[uint64](ev.Hashes))
		ln.counters.add(unsafe.Offsetof(Stats{}.BlocksRemoved), uint64(removed))
		ln.counters.add(unsafe.Offsetof(Stats{}.RemovesUnknown), uint64(len(ev.Hashes)-removed))
	case KindCleared:
		if ws != nil {
			ln.own.Clear(ws)
		}
	default:
		err = ErrBadKind
	}
	if ws != nil && ws.Slot >= 0 {
		ln.ix.slots.SetBlocks(ws.Slot, ws.Blocks())
		ln.own.Check(ws)
	}
	ln.own.TrimScratch()
	if err != nil {
		return ln.ix.reject(ev, err, &ln.counters)
	}
	ln.counters.applied(ev.Kind)
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
	if err := ln.own.Prepare(ws, uint64(ev.Parent), ev.HasParent, view[worker.Block](ev.Blocks), ln.ix.cfg.MaxDepth); err != nil {
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
	ln.counters.add(unsafe.Offsetof(Stats{}.BlocksStored), uint64(stored))
	ln.counters.add(unsafe.Offsetof(Stats{}.BlocksDuplicate), uint64(dup))
	return ws, nil
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
		ln.counters.add(unsafe.Offsetof(Stats{}.WorkersRemoved), 1)
	}
}
