package lane

import (
	"sync"
	"time"

	"github.com/flashindexer/flashindexer/flash/internal/entry"
	"github.com/flashindexer/flashindexer/flash/internal/ring"
	"github.com/flashindexer/flashindexer/flash/internal/snapshot"
	"github.com/flashindexer/flashindexer/flash/internal/worker"
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

	// Predictions: each worker's (kept while the worker is), the writer
	// of the lane's predicted table, their count, the earliest expiry
	// (a lower bound) and the walks' scratch.
	preds  map[Worker]*preds
	pw     entry.Writer
	npred  int
	next   time.Duration
	pstack []uint32
}

// item is a queued event, RemoveWorker, call, prediction or expiry, with
// its own copies of the slices, reused from one lap of the ring to the
// next.
type item struct {
	kind     itemKind
	ev       Event
	blocks   []worker.Block
	hashes   []uint64 // an event's; a prediction's local hashes
	removeID uint64
	fn       func()        // a call run on the writer between events (Dump, Restore)
	w        Worker        // a prediction's
	now, ttl time.Duration // a prediction's or an expiry's call time, a prediction's ttl
}

type itemKind uint8

const (
	itemEvent itemKind = iota
	itemRemove
	itemCall
	itemPredict
	itemExpire
)

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
	ln := &lane{s: s, id: id, workers: map[Worker]*worker.State{}, preds: map[Worker]*preds{}}
	ln.own.W = entry.Writer{Sets: s.o.Sets, Alloc: s.o.Sets.Arena.NewAllocator()}
	ln.pw = entry.Writer{Sets: s.o.Sets, Alloc: ln.own.W.Alloc}
	ln.own.K0, ln.own.K1 = s.o.K0, s.o.K1
	ln.own.Tiers = max(s.o.Tiers, 1)
	if c := s.o.Capacity; c != nil {
		ln.own.Hint = func(id uint64, rank uint32) int { return c(Worker{ID: id, DPRank: rank}) }
		ln.own.Reserve = s.o.Reserve
	}
	if !s.o.Sync {
		ln.ring.Init(queue, &s.closed)
	}
	return ln
}

// enqueue copies an event (or a RemoveWorker of *removeID) into the ring.
func (ln *lane) enqueue(ev *Event, removeID *uint64, try bool) error {
	kind := itemEvent
	if ev == nil {
		kind = itemRemove
	}
	it, err := ln.reserve(kind, try, ev)
	if err != nil {
		return err
	}
	if ev != nil {
		it.ev = *ev
		it.blocks = append(it.blocks[:0], ev.Blocks...)
		it.hashes = append(it.hashes[:0], ev.Hashes...)
		it.ev.Blocks, it.ev.Hashes = it.blocks, it.hashes
	} else {
		it.removeID = *removeID
	}
	ln.ring.Commit()
	return nil
}

// reserve takes the ring's next item for one of kind, or counts and
// returns why it cannot (an event's rejection goes to the handler too).
func (ln *lane) reserve(kind itemKind, try bool, ev *Event) (*item, error) {
	s := ln.s
	it, err := ln.ring.Reserve(try)
	if err == nil {
		it.kind = kind
		return it, nil
	}
	if err == ring.ErrFull {
		err = ErrQueueFull
	} else {
		err = ErrClosed
	}
	switch kind {
	case itemEvent:
		s.reject(ev, err, &s.admission)
	case itemRemove:
		s.admission.reject(0, err)
	case itemPredict:
		s.admission.add(PredictionsRejected, 1)
	}
	return nil, err
}

// enqueueCall queues a call of fn on the writer.
func (ln *lane) enqueueCall(fn func()) error {
	it, err := ln.reserve(itemCall, false, nil)
	if err == nil {
		it.fn = fn
		ln.ring.Commit()
	}
	return err
}

// enqueuePredict copies a prediction made at now into the ring.
func (ln *lane) enqueuePredict(w Worker, locals []uint64, now, ttl time.Duration) error {
	it, err := ln.reserve(itemPredict, false, nil)
	if err == nil {
		it.w, it.now, it.ttl, it.hashes = w, now, ttl, append(it.hashes[:0], locals...)
		ln.ring.Commit()
	}
	return err
}

// enqueueExpire asks the writer to drop what expired by now.
func (ln *lane) enqueueExpire(now time.Duration, try bool) {
	if it, err := ln.reserve(itemExpire, try, nil); err == nil {
		it.now = now
		ln.ring.Commit()
	}
}

// run is the writer goroutine.
func (ln *lane) run(cpu int) {
	defer ln.s.stopped.Done()
	ln.ring.Serve(cpu, ln.id, ln.applyItem)
}

// applyItem applies one queued item on the writer.
func (ln *lane) applyItem(it *item) {
	switch it.kind {
	case itemCall:
		it.fn()
		it.fn = nil
	case itemRemove:
		ln.removeWorker(it.removeID)
	case itemPredict:
		if ln.predict(it.w, it.hashes, it.now, it.ttl) != nil {
			ln.counters.add(PredictionsRejected, 1)
		}
		it.release()
	case itemExpire:
		ln.expire(it.now)
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
	if err := ln.enqueueCall(func() { fn(); close(done) }); err != nil {
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
	ln.own.Tier = ev.Tier
	switch ev.Kind {
	case Stored:
		ws, err = ln.store(ws, ev)
	case Removed:
		if ws == nil {
			ln.counters.add(RemovesUnknown, uint64(len(ev.Hashes)))
			break
		}
		p := ln.preds[ev.Worker]
		ln.own.TrackGone = p != nil && p.len() > 0
		removed := ln.own.Remove(ws, ev.Hashes)
		if ln.own.TrackGone {
			ln.dropGone(ev.Worker, p, ws.Slot)
		}
		ln.counters.add(BlocksRemoved, uint64(removed))
		ln.counters.add(RemovesUnknown, uint64(len(ev.Hashes)-removed))
	case Cleared:
		switch {
		case ws == nil:
		case ev.TierOnly && ln.own.Tiers > 1:
			// One tier: its blocks leave as a Removed event of them all
			// would take them, predictions of what leaves with them.
			p := ln.preds[ev.Worker]
			ln.own.TrackGone = p != nil && p.len() > 0
			ln.own.ClearTier(ws)
			if ln.own.TrackGone {
				ln.dropGone(ev.Worker, p, ws.Slot)
			}
		default:
			ln.dropAll(ev.Worker, ws.Slot)
			ln.own.Clear(ws)
		}
	default:
		err = ErrBadKind
	}
	if ws != nil && ws.Slot >= 0 {
		ln.s.o.Dir.SetBlocks(ws.Slot, ws.Blocks())
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
		slot, err := ln.s.intern(ev.Worker, nil)
		if err != nil {
			return nil, err // the new state is dropped, its claims with it
		}
		ws.Slot = slot
		ln.workers[ev.Worker] = ws
		ln.reserveFor(ws, 1)
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
		ln.dropAll(w, ws.Slot)
		delete(ln.preds, w)
		ln.own.Clear(ws)
		ln.own.Release(ws)
		ln.reserveFor(ws, -1)
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

// worker returns w's state, making it with a slot if w has none (fresh):
// one a Restore set aside while *budget > 0 (Set.intern; nil: none).
func (ln *lane) worker(w Worker, budget *int) (ws *worker.State, fresh bool, err error) {
	if ws = ln.workers[w]; ws != nil {
		return ws, false, nil
	}
	slot, err := ln.s.intern(w, budget)
	if err != nil {
		return nil, false, err
	}
	ws = ln.own.New(w.ID, w.DPRank, slot)
	ln.workers[w] = ws
	ln.reserveFor(ws, 1)
	return ws, true, nil
}

// reserveFor sets room aside for a hinted worker whose state is made
// ahead (Owner.Reserve) that takes its slot (sign 1), in the shared table
// its slot writes (shardmap's Reserve: tables for its blocks, the levels of
// their positions), and the batch scratch for an event of its blocks; or
// gives the table's room back when it leaves (sign -1), for the workers
// after it. The room stays the table's.
func (ln *lane) reserveFor(ws *worker.State, sign int) {
	if ws.Hint == 0 || !ln.own.Reserve {
		return
	}
	tab, _ := ln.own.W.Plane(ws.Slot * ln.own.Tiers)
	if sign > 0 {
		tab.Map().Reserve(ws.Hint, ws.Hint)
		ln.own.ReserveScratch(ws.Hint)
		return
	}
	tab.Map().Reserve(-ws.Hint, 0)
}

// restoreWorker replaces one worker's state, a new one taking a slot the
// Restore set aside (budget). The caller owns the lane.
func (ln *lane) restoreWorker(sw snapshot.Worker, budget *int) error {
	w := Worker{ID: sw.ID, DPRank: sw.Rank}
	ws, fresh, err := ln.worker(w, budget)
	if err != nil {
		return err
	}
	if !fresh {
		ln.dropAll(w, ws.Slot)
		ln.own.Clear(ws)
	}
	ln.own.Restore(ws, sw)
	ln.s.o.Dir.SetBlocks(ws.Slot, ws.Blocks())
	return nil
}
