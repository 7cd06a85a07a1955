package lane

import (
	"sync"

	"github.com/flashindexer/flashindexer/internal/entry"
	"github.com/flashindexer/flashindexer/internal/ring"
	"github.com/flashindexer/flashindexer/internal/snapshot"
	"github.com/flashindexer/flashindexer/internal/worker"
)

// lane is one writer: the private state of the workers it owns, its arena
// allocator, its counters, and (with writer goroutines) its event queue, a
// ring (internal/ring) of items. An applied item keeps no reference to the
// caller's slices (release), and buffers over keepBlocks are dropped, so
// the ring holds at most queue × keepBlocks blocks between bursts. In
// synchronous mode there is no ring: mu is the lane, held for each event.
type lane struct {
	s        *Set
	id       int
	own      worker.Owner // its workers' entry writer, map keys and scratch
	workers  map[Worker]*worker.State
	counters Tally
	nextID   map[Worker]uint64 // event id tracking: the id expected next
	mu       sync.Mutex        // synchronous mode: the lane
	ring     ring.Ring[item]
}

// item is a queued event (or RemoveWorker) with its own copies of the
// event's slices, reused from one lap of the ring to the next.
type item struct {
	ev       Event
	blocks   []worker.Block
	hashes   []uint64
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

func newLane(s *Set, id, queue int) *lane {
	ln := &lane{s: s, id: id, workers: map[Worker]*worker.State{}}
	ln.own.W = entry.Writer{Sets: s.o.Sets, Alloc: s.o.Sets.Arena.NewAllocator()}
	ln.own.K0, ln.own.K1 = s.o.K0, s.o.K1
	if c := s.o.Capacity; c != nil {
		ln.own.Hint = func(id uint64, rank uint32) int { return c(Worker{ID: id, DPRank: rank}) }
	}
	if !s.o.Sync {
		ln.ring.Init(queue, &s.closed)
	}
	return ln
}

// enqueue copies an event (or a RemoveWorker of *removeID, or a call of fn)
// into the ring.
func (ln *lane) enqueue(ev *Event, removeID *uint64, try bool) error {
	return ln.enqueueItem(ev, removeID, nil, try)
}

func (ln *lane) enqueueItem(ev *Event, removeID *uint64, fn func(), try bool) error {
	s := ln.s
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
			s.admission.reject(0, err)
		default:
			s.reject(ev, err, &s.admission)
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
	defer ln.s.stopped.Done()
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
	if ln.s.o.Sync {
		ln.mu.Lock()
		defer ln.mu.Unlock()
		fn()
		return
	}
	if ln.callOpen(fn) != nil {
		ln.s.stopped.Wait()
		fn()
	}
}

// callOpen runs fn with the lane owned, as call does, while the index is
// open: a change (Restore) that Close overtakes returns ErrClosed and leaves
// the lane as Close left it. With writers, fn runs if it was queued before
// Close (Close applies everything accepted).
func (ln *lane) callOpen(fn func()) error {
	if ln.s.o.Sync {
		ln.mu.Lock()
		defer ln.mu.Unlock()
		if ln.s.closed.Load() {
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
		ln.counters.add(EventGaps, 1)
	} else {
		ln.counters.add(EventRestarts, 1)
	}
	ln.s.o.OnGap(ev.Worker, next, ev.ID)
}

// apply applies one event to the lane's state. The caller owns the lane.
func (ln *lane) apply(ev *Event) error {
	if ln.s.o.OnGap != nil {
		ln.trackID(ev)
	}
	var err error
	ws := ln.workers[ev.Worker]
	switch ev.Kind {
	case Stored:
		ws, err = ln.store(ws, ev)
	case Removed:
		if ws == nil {
			ln.counters.add(RemovesUnknown, uint64(len(ev.Hashes)))
			break
		}
		removed := ln.own.Remove(ws, ev.Hashes)
		ln.counters.add(BlocksRemoved, uint64(removed))
		ln.counters.add(RemovesUnknown, uint64(len(ev.Hashes)-removed))
	case Cleared:
		if ws != nil {
			ln.own.Clear(ws)
		}
	default:
		err = ErrBadKind
	}
	if ws != nil && ws.Slot >= 0 {
		ln.s.o.Slots.SetBlocks(ws.Slot, ws.Blocks())
		ln.own.Check(ws)
	}
	ln.own.TrimScratch()
	if err != nil {
		return ln.s.reject(ev, err, &ln.counters)
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
			return nil, worker.ErrUnknownParent
		}
		ws = ln.own.New(ev.Worker.ID, ev.Worker.DPRank, -1)
	}
	if err := ln.own.Prepare(ws, ev.Parent, ev.HasParent, ev.Blocks, ln.s.o.MaxDepth); err != nil {
		if fresh {
			return nil, err
		}
		return ws, err
	}
	if fresh {
		slot, err := ln.s.intern(ev.Worker)
		if err != nil {
			return nil, err // the new state is dropped, its claims with it
		}
		ws.Slot = slot
		ln.workers[ev.Worker] = ws
	}
	stored, dup := ln.own.Commit(ws)
	ln.counters.add(BlocksStored, uint64(stored))
	ln.counters.add(BlocksDuplicate, uint64(dup))
	return ws, nil
}

func (ln *lane) removeWorker(id uint64) {
	removed := false
	for w, ws := range ln.workers {
		if w.ID != id {
			continue
		}
		ln.own.Clear(ws)
		ln.s.release(w, ws.Slot)
		delete(ln.workers, w)
		removed = true
	}
	for w := range ln.nextID {
		if w.ID == id {
			delete(ln.nextID, w)
		}
	}
	if removed {
		ln.counters.add(WorkersRemoved, 1)
	}
}

// restoreWorker replaces one worker's state. The caller owns the lane.
func (ln *lane) restoreWorker(sw snapshot.Worker) error {
	w := Worker{ID: sw.ID, DPRank: sw.Rank}
	ws := ln.workers[w]
	if ws == nil {
		slot, err := ln.s.intern(w)
		if err != nil {
			return err
		}
		ws = ln.own.New(w.ID, w.DPRank, slot)
		ln.workers[w] = ws
	} else {
		ln.own.Clear(ws)
	}
	ln.own.Restore(ws, sw)
	ln.s.o.Slots.SetBlocks(ws.Slot, ws.Blocks())
	return nil
}
