package lane

import (
	"io"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flashindexer/flashindexer/affinity"
	"github.com/flashindexer/flashindexer/flash/internal/entry"
	"github.com/flashindexer/flashindexer/flash/internal/slotdir"
	"github.com/flashindexer/flashindexer/flash/internal/snapshot"
	"github.com/flashindexer/flashindexer/flash/internal/worker"
	"github.com/flashindexer/flashindexer/shardmap"
)

// Options is how a Set is wired.
type Options struct {
	Lanes int  // at least 1
	Sync  bool // no writer goroutines: Apply applies on its caller
	Queue int  // each writer's ring, in events
	Pin   bool // pin writer threads to CPUs

	MaxDepth, MaxBatch int
	Tiers              int // KV-cache tiers (0: 1)
	Sets               *entry.Sets
	// Tabs are the shared tables: one group, or one per lane, of Planes
	// tables each (a table per plane of 64 worker slots; Planes 0 or 1:
	// one table), the groups one after another.
	Tabs         []*shardmap.Map
	Preds        []*shardmap.Map // the predicted blocks' tables, as Tabs
	Planes       int
	MaxPredicted int // per worker
	Clock        func() time.Duration
	Dir          *slotdir.Table
	K0, K1       uint64 // keys of the private maps' hash

	OnReject func(ev *Event, err error)
	OnGap    func(w Worker, expected, got uint64) // nil: ids not tracked
	Capacity func(w Worker) int                   // nil: no hints
	Reserve  bool                                 // hinted workers' state made ahead
}

// Set is the lanes of one index.
type Set struct {
	o         Options
	lanes     []*lane
	closed    atomic.Bool
	halted    atomic.Bool // closed, and every writer stopped: callers own the lanes
	admission Tally
	stopped   sync.WaitGroup

	workersMu sync.Mutex                // intern, release, held
	held      int                       // free slots set aside for Restores' new workers
	directory atomic.Pointer[Directory] // copy-on-write

	predicted  atomic.Int64  // predicted blocks, every lane's
	predicting atomic.Bool   // Predict was called
	ticker     sync.Once     // starts the expiry timer at the first prediction
	stopTick   chan struct{} // closed by Close
}

// Tables returns the shared tables of an index of that many lanes and
// planes: a group of planes tables (a table per plane of 64 worker slots),
// or with perLane one group per lane, each then written by its lane alone
// (one shard a position: shards only keep writers off each other's locks).
// A wide index (more than 128 workers) fills its tables denser: its
// entries are many per worker, and memory is what grows with the fleet.
func Tables(lanes, planes int, perLane, wide bool) (tabs []*shardmap.Map) {
	bits, n := shardmap.ShardBitsFor(lanes), planes
	if perLane && lanes > 1 {
		bits, n = 0, lanes*planes
	}
	opts := []shardmap.Option{shardmap.WithShardBits(bits)}
	if wide {
		opts = append(opts, shardmap.WithDenseTables())
	}
	for range n {
		tabs = append(tabs, shardmap.New(opts...))
	}
	return tabs
}

// ExpiryTick is how often a Set with predictions has each lane drop what
// expired, while nothing else makes it step.
const ExpiryTick = 10 * time.Millisecond

// New makes the lanes and, unless o.Sync, starts their writers.
func New(o Options) *Set {
	s := &Set{o: o, stopTick: make(chan struct{})}
	s.directory.Store(&Directory{})
	var cpus []int
	if !o.Sync && o.Pin {
		cpus = affinity.Plan(o.Lanes)
	}
	planes := max(o.Planes, 1)
	groups := len(o.Tabs) / planes
	for i := range o.Lanes {
		ln := newLane(s, i, o.Queue)
		// A lane with tables of its own, or the only lane, is its tables'
		// single writer.
		g := min(i, groups-1) * planes
		ln.own.W.Use(o.Tabs[g:g+planes], groups > 1 || o.Lanes == 1)
		ln.pw.Use(o.Preds[g:g+planes], ln.own.W.Excl)
		s.lanes = append(s.lanes, ln)
		if !o.Sync {
			cpu := -1
			if i < len(cpus) {
				cpu = cpus[i]
			}
			s.stopped.Add(1)
			go ln.run(cpu)
		}
	}
	return s
}

// Lanes returns the number of lanes.
func (s *Set) Lanes() int { return len(s.lanes) }

// LaneOf returns the lane of worker ID id.
func (s *Set) LaneOf(id uint64) int { return s.laneOf(id).id }

func (s *Set) laneOf(id uint64) *lane {
	if len(s.lanes) == 1 {
		return s.lanes[0]
	}
	return s.lanes[For(id, len(s.lanes))]
}

func (s *Set) reject(ev *Event, err error, t *Tally) error {
	t.reject(ev.Kind, err)
	if s.o.OnReject != nil {
		s.report(*ev, err)
	}
	return err
}

// report hands the reject handler a copy, so that events on the accepted
// path never escape to the heap.
func (s *Set) report(ev Event, err error) { s.o.OnReject(&ev, err) }

// Apply checks ev and hands it to its worker's lane: applied at once by a
// synchronous Set (every error returned), else copied into the lane's ring
// (only admission errors returned; with try, ErrQueueFull rather than a
// wait for room).
func (s *Set) Apply(ev *Event, try bool) error {
	if err := Check(ev, s.o.MaxBatch, max(s.o.Tiers, 1)); err != nil {
		return s.reject(ev, err, &s.admission)
	}
	ln := s.laneOf(ev.Worker.ID)
	if s.o.Sync {
		// The event's blocks come while the lane is taken and the worker
		// found.
		prefetchEvent(ev)
		ln.mu.Lock()
		defer ln.mu.Unlock()
		if s.closed.Load() {
			return s.reject(ev, ErrClosed, &s.admission)
		}
		return ln.apply(ev)
	}
	return ln.enqueue(ev, nil, try)
}

// RemoveWorker drops every DP rank of worker id, ordered with its events.
func (s *Set) RemoveWorker(id uint64) error {
	ln := s.laneOf(id)
	if s.o.Sync {
		ln.mu.Lock()
		defer ln.mu.Unlock()
		if s.closed.Load() {
			s.admission.reject(0, ErrClosed)
			return ErrClosed
		}
		ln.removeWorker(id)
		return nil
	}
	return ln.enqueue(nil, &id, false)
}

// AddWorker gives w a slot and its state, holding nothing, if it has none,
// on its lane (with writers, ordered with w's events), and returns once it
// is done: ErrTooManyWorkers when every slot is taken, ErrClosed after
// Close, each counted as a rejection.
func (s *Set) AddWorker(w Worker) error {
	ln := s.laneOf(w.ID)
	var err error
	if cerr := ln.callOpen(func() {
		if _, _, err = ln.worker(w, nil); err != nil {
			ln.counters.reject(0, err)
		}
	}); cerr != nil {
		s.admission.reject(0, cerr)
		return cerr
	}
	return err
}

// Flush returns once every event accepted before the call is applied, and
// every prediction expired at the call dropped.
func (s *Set) Flush() {
	if s.predicting.Load() {
		s.expire(false)
	}
	if !s.o.Sync {
		for _, ln := range s.lanes {
			ln.ring.Flush()
		}
	}
}

// Predicted counts the predicted blocks of every lane: 0 tells a query
// that there are none to search.
func (s *Set) Predicted() *atomic.Int64 { return &s.predicted }

// Predict checks a prediction of the blocks of locals for w and hands it
// to w's lane, as Apply does an event.
func (s *Set) Predict(w Worker, locals []uint64, ttl time.Duration) error {
	err := CheckPrediction(len(locals), ttl, s.o.MaxBatch, s.o.MaxDepth)
	if err == nil && s.closed.Load() {
		err = ErrClosed
	}
	if err != nil {
		s.admission.add(PredictionsRejected, 1)
		return err
	}
	if !s.predicting.Load() {
		s.predicting.Store(true)
		s.ticker.Do(func() { go s.tick() })
	}
	ln, now := s.laneOf(w.ID), s.o.Clock()
	if !s.o.Sync {
		return ln.enqueuePredict(w, locals, now, ttl)
	}
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if s.closed.Load() {
		err = ErrClosed
	} else {
		err = ln.predict(w, locals, now, ttl)
	}
	if err != nil {
		ln.counters.add(PredictionsRejected, 1)
	}
	return err
}

// tick has every lane drop what expired, each ExpiryTick while there are
// predictions, until Close.
func (s *Set) tick() {
	t := time.NewTicker(ExpiryTick)
	defer t.Stop()
	for {
		select {
		case <-s.stopTick:
			return
		case <-t.C:
		}
		if s.predicted.Load() > 0 {
			s.expire(true)
		}
	}
}

// expire has every lane drop what expired by now: at once under its lock
// (synchronous), or in its queue (with try, not if it is full).
func (s *Set) expire(try bool) {
	now := s.o.Clock()
	for _, ln := range s.lanes {
		if s.o.Sync || s.halted.Load() {
			ln.mu.Lock()
			ln.expire(now)
			ln.mu.Unlock()
		} else {
			ln.enqueueExpire(now, try)
		}
	}
}

// Close applies every accepted event and stops the writers; ErrClosed if
// it was closed already.
func (s *Set) Close() error {
	if s.closed.Swap(true) {
		return ErrClosed
	}
	close(s.stopTick)
	if !s.o.Sync {
		for _, ln := range s.lanes {
			ln.ring.Stop()
		}
		s.stopped.Wait()
		// The writers are gone: a Flush drops what expired under the
		// lanes' locks, as a synchronous Set's does.
		s.halted.Store(true)
	}
	s.checkTables()
	return nil
}

// Counts adds the counters into c, EventsApplied summed from the kinds.
func (s *Set) Counts(c *Counts) {
	s.admission.AddTo(c)
	for _, ln := range s.lanes {
		ln.counters.AddTo(c)
	}
	c[EventsApplied] = c[StoredApplied] + c[RemovedApplied] + c[Clears]
}

// Directory is the workers holding a slot, each with its slot, in the
// order of their IDs and ranks: a sorted base and a short sorted delta of
// the changes since (Slot -1: removed from the base), read lock-free from
// one snapshot. A change copies the delta alone, which merges into the
// base once it holds more than the square root of the base's entries: a
// fleet of W workers arriving copies O(W√W) entries, not O(W²) (at 4,096
// workers, whole copies took 40% of storing the trace from empty).
type Directory struct {
	base, delta []DirEntry
	n           int
}

// DirEntry is a worker and its slot.
type DirEntry struct {
	W    Worker
	Slot int32
}

// less orders workers by ID, then rank.
func (w Worker) less(x Worker) bool { return w.ID < x.ID || w.ID == x.ID && w.DPRank < x.DPRank }

// find returns where w is, or would go, in d.
func find(d []DirEntry, w Worker) int {
	i, j := 0, len(d)
	for i < j {
		h := int(uint(i+j) >> 1)
		if d[h].W.less(w) {
			i = h + 1
		} else {
			j = h
		}
	}
	return i
}

// at returns w's entry in d, or false.
func at(d []DirEntry, w Worker) (DirEntry, bool) {
	if i := find(d, w); i < len(d) && d[i].W == w {
		return d[i], true
	}
	return DirEntry{}, false
}

// Len returns the number of workers.
func (d Directory) Len() int { return d.n }

// Slot returns w's slot, or false.
func (d Directory) Slot(w Worker) (int32, bool) {
	if e, ok := at(d.delta, w); ok {
		return e.Slot, e.Slot >= 0
	}
	e, ok := at(d.base, w)
	return e.Slot, ok
}

// All yields every worker's entry, in order.
func (d Directory) All() iter.Seq[DirEntry] {
	return func(yield func(DirEntry) bool) {
		i, j := 0, 0
		for i < len(d.base) || j < len(d.delta) {
			var e DirEntry
			switch {
			case j == len(d.delta) || i < len(d.base) && d.base[i].W.less(d.delta[j].W):
				e, i = d.base[i], i+1
			case i < len(d.base) && d.base[i].W == d.delta[j].W:
				e, i, j = d.delta[j], i+1, j+1
			default:
				e, j = d.delta[j], j+1
			}
			if e.Slot >= 0 && !yield(e) {
				return
			}
		}
	}
}

// Directory returns the workers holding a slot: a snapshot, read without
// a lock, that the caller MUST NOT change.
func (s *Set) Directory() Directory { return *s.directory.Load() }

// QueueDepths appends each writer's queue length to dst.
func (s *Set) QueueDepths(dst []int) []int {
	if s.o.Sync {
		return dst
	}
	for _, ln := range s.lanes {
		dst = append(dst, ln.ring.Len())
	}
	return dst
}

// intern gives w a worker slot: one of those a Restore set aside for its
// new workers when *budget > 0 (spending one), else one nobody set aside.
func (s *Set) intern(w Worker, budget *int) (int, error) {
	s.workersMu.Lock()
	defer s.workersMu.Unlock()
	if budget != nil && *budget > 0 {
		*budget--
		s.held--
	} else if s.o.Dir.Len()-s.o.Dir.Used() <= s.held {
		return 0, ErrTooManyWorkers
	}
	slot, ok := s.o.Dir.Take(w.ID, w.DPRank)
	if !ok {
		return 0, ErrTooManyWorkers
	}
	s.setDirectory(w, int32(slot))
	return slot, nil
}

// release frees w's slot. Its bits must be clear already.
func (s *Set) release(w Worker, slot int) {
	s.workersMu.Lock()
	defer s.workersMu.Unlock()
	s.o.Dir.Give(slot)
	s.setDirectory(w, -1)
}

// setDirectory publishes a directory with w at slot (or without w: slot
// -1), its delta copied with w's change, or merged into a new base. The
// caller holds workersMu.
func (s *Set) setDirectory(w Worker, slot int32) {
	old := s.directory.Load()
	_, had := old.Slot(w)
	_, inBase := at(old.base, w)
	nd := &Directory{base: old.base, n: old.n}
	switch {
	case had && slot < 0:
		nd.n--
	case !had && slot >= 0:
		nd.n++
	}
	i := find(old.delta, w)
	rest := old.delta[i:]
	if i < len(old.delta) && old.delta[i].W == w {
		rest = rest[1:]
	}
	nd.delta = make([]DirEntry, 0, len(old.delta)+1)
	nd.delta = append(nd.delta, old.delta[:i]...)
	if slot >= 0 || inBase {
		nd.delta = append(nd.delta, DirEntry{w, slot}) // (a removal from the base: -1)
	}
	nd.delta = append(nd.delta, rest...)
	if len(nd.delta)*len(nd.delta) > len(nd.base)+16 {
		base := make([]DirEntry, 0, nd.n)
		for e := range nd.All() {
			base = append(base, e)
		}
		nd.base, nd.delta = base, nil
	}
	s.directory.Store(nd)
}

// Memory adds the workers' private state into m, each lane's on its
// writer between two events.
func (s *Set) Memory(m *worker.Memory) {
	for _, ln := range s.lanes {
		ln.call(func() {
			for _, ws := range ln.workers {
				ws.AddMemory(m)
			}
			ln.own.AddMemory(m)
			for _, p := range ln.preds {
				m.Predictions += p.bytes()
			}
		})
	}
}

// Dump writes a snapshot of every worker, or of the listed ones, each read
// on its lane between two of its events (flash.Indexer.Dump).
func (s *Set) Dump(w io.Writer, workers ...Worker) (int, error) {
	want := map[Worker]bool{}
	for _, x := range workers {
		want[x] = true
	}
	var all []snapshot.Worker
	for _, ln := range s.lanes {
		ln.call(func() {
			for x, ws := range ln.workers {
				if len(want) == 0 || want[x] {
					all = append(all, ln.own.Dump(ws))
				}
			}
		})
	}
	slices.SortFunc(all, func(a, b snapshot.Worker) int {
		if a.ID != b.ID {
			if a.ID < b.ID {
				return -1
			}
			return 1
		}
		return int(a.Rank) - int(b.Rank)
	})
	return snapshot.Write(w, all)
}

// Restore loads a snapshot written by Dump (flash.Indexer.Restore).
func (s *Set) Restore(r io.Reader) error {
	if s.closed.Load() {
		return ErrClosed
	}
	sws, err := snapshot.Read(r, s.o.MaxDepth, max(s.o.Tiers, 1))
	if err != nil {
		return err
	}
	// Events accepted before the call take their slots first; then the
	// slots of the snapshot's new workers are set aside, so that nothing
	// after the check can make the restore fail halfway.
	s.Flush()
	s.workersMu.Lock()
	dir := s.Directory()
	budget := 0
	for _, sw := range sws {
		if _, ok := dir.Slot(Worker{ID: sw.ID, DPRank: sw.Rank}); !ok {
			budget++
		}
	}
	if budget > s.o.Dir.Len()-s.o.Dir.Used()-s.held {
		s.workersMu.Unlock()
		return ErrTooManyWorkers
	}
	s.held += budget
	s.workersMu.Unlock()
	defer func() { // what the restore did not take goes back
		s.workersMu.Lock()
		s.held -= budget
		s.workersMu.Unlock()
	}()
	byLane := map[*lane][]snapshot.Worker{}
	for _, sw := range sws {
		ln := s.laneOf(sw.ID)
		byLane[ln] = append(byLane[ln], sw)
	}
	var firstErr error
	for ln, list := range byLane {
		err := ln.callOpen(func() {
			for _, sw := range list {
				if err := ln.restoreWorker(sw, &budget); err != nil && firstErr == nil {
					firstErr = err
				}
			}
		})
		if err != nil {
			return err
		}
	}
	return firstErr
}
