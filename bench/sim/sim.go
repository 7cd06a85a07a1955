// Package sim records a workload: it routes a trace's requests across mock
// engines with a KV-aware router and records, on one timeline, every
// engine's cache events and every routing query.
//
// A mock engine has a fixed number of cache blocks, prefix caching and LRU
// eviction of unreferenced blocks. A request reuses the cached prefix of its
// prompt, allocates the rest (evicting the least recently used free blocks,
// which emits Removed events), emits one Stored event for its new blocks
// (parent: the last reused block), holds its blocks while it runs and
// releases them when it finishes (last block first, so a chain's tail is
// evicted before its head). Engine block ids are the blocks' sequence
// hashes, as vLLM's chained block hashes are content ids.
//
// The router asks an index for every worker's overlap with the prompt and
// sends the request to the worker with the lowest cost: the blocks it would
// have to compute (prompt blocks minus overlap) plus a weight times the
// blocks of its requests still running; ties go to a seeded random choice.
// Best overlap alone would send every request to one worker: every request
// of the conversation trace starts with the same block.
//
// The router's index may see the engines' events late (EventDelay), may
// record each routing decision as a prediction (flash.Predictor), or may
// have no events at all (Route): the hit rate (HitBlocks ÷ QueryBlocks)
// and the spread of requests over workers measure what each costs.
//
// With CPUBlocks, each engine also has a CPU cache of that many blocks,
// as vLLM's offloading connector keeps: a block evicted from the GPU is
// copied there first (a Stored event in tier 1, when its parent is still
// held somewhere: else nothing could reach it), the CPU cache evicting its
// own least recently used blocks in turn (Removed in tier 1). A request
// reuses its prompt's leading GPU blocks, then the CPU blocks that follow
// them, loaded back to the GPU (CPUHitBlocks: their prefill is saved, at
// the cost of a copy, LoadSpeedup times faster than computing them). The
// router's index then has two tiers, and the router weighs a worker's CPU
// blocks (TierAware) or counts its GPU blocks alone.
package sim

import (
	"container/heap"
	"math/rand/v2"
	"sort"
	"sync/atomic"
	"time"

	"github.com/flashindexer/flashindexer/bench/trace"
	"github.com/flashindexer/flashindexer/flash"
)

// Config sets up the simulation.
type Config struct {
	Workers     int     // engines (default 16)
	CacheBlocks int     // cache blocks per engine (default 16,384)
	BlockSize   int     // engine block size in tokens (default 512)
	LoadWeight  float64 // cost weight of a worker's running blocks (default 0.5)
	PrefillRate float64 // prompt tokens per second an engine computes (default 16,000)
	DecodeRate  float64 // output tokens per second of one request (default 40)
	Seed        uint64
	// Route is what the router's index learns from; EventDelay is how
	// late the engines' events reach it; PredictTTL is how long a
	// prediction lasts (default flash.DefaultPredictionTTL).
	Route      Route
	EventDelay time.Duration
	PredictTTL time.Duration
	// CPUBlocks is each engine's CPU cache in blocks (0: none);
	// LoadSpeedup how many times faster an engine loads a block from it
	// than it computes one (default 8). TierAware routes on both tiers'
	// depths, a CPU block worth CPUWeight of a GPU block (default
	// flash.DefaultTierWeight(1)); otherwise on the GPU's alone.
	CPUBlocks   int
	LoadSpeedup float64
	TierAware   bool
	CPUWeight   float64
}

// Route says what the router's index is fed.
type Route int

const (
	RouteEvents        Route = iota // the engines' events
	RouteEventsPredict              // the events, and each routing decision as a prediction
	RoutePredict                    // each routing decision as a prediction, no events
	RouteRoundRobin                 // nothing: request i goes to worker i mod Workers
)

func (r Route) String() string {
	return [...]string{"events", "events+predictions", "predictions", "round-robin"}[r]
}

func (c Config) norm() Config {
	if c.Workers <= 0 {
		c.Workers = 16
	}
	if c.CacheBlocks <= 0 {
		c.CacheBlocks = 16384
	}
	if c.BlockSize <= 0 {
		c.BlockSize = 512
	}
	if c.LoadWeight <= 0 {
		c.LoadWeight = 0.5
	}
	if c.PrefillRate <= 0 {
		c.PrefillRate = 16000
	}
	if c.DecodeRate <= 0 {
		c.DecodeRate = 40
	}
	if c.PredictTTL <= 0 {
		c.PredictTTL = flash.DefaultPredictionTTL
	}
	if c.LoadSpeedup <= 0 {
		c.LoadSpeedup = 8
	}
	if c.CPUWeight <= 0 {
		c.CPUWeight = flash.DefaultTierWeight(1)
	}
	return c
}

// Op is one recorded operation.
type Op struct {
	T     int64 // ns from the start of the trace
	Event *flash.Event
	Query *flash.Query
}

// BlockOps returns the op's block-ops: stored or removed blocks, or query blocks.
func (o *Op) BlockOps() int {
	if o.Query != nil {
		return len(o.Query.Locals)
	}
	return len(o.Event.Blocks) + len(o.Event.Hashes)
}

// Workload is a recorded timeline.
type Workload struct {
	Ops           []Op // by time
	Workers       []flash.Worker
	BlockSize     int
	Span          int64 // ns from the first op to the last
	Events        int
	Queries       int
	StoredBlocks  int
	RemovedBlocks int
	QueryBlocks   int
	HitBlocks     int   // prompt blocks found cached where the request ran (on its GPU)
	CPUHitBlocks  int   // and after them, in its CPU cache (CPUBlocks)
	PerWorker     []int // requests routed to each worker
	Tiers         int   // tiers of the engines' events: 2 with CPUBlocks, else 1
}

// CPUHitRate is the share of query blocks found in CPU caches where they
// ran, after the GPU's.
func (w *Workload) CPUHitRate() float64 {
	return float64(w.CPUHitBlocks) / float64(max(1, w.QueryBlocks))
}

// SavedBlocks is the prefill blocks saved: found cached, in either tier.
func (w *Workload) SavedBlocks() int { return w.HitBlocks + w.CPUHitBlocks }

// HitRate is the share of query blocks found cached where they ran.
func (w *Workload) HitRate() float64 { return float64(w.HitBlocks) / float64(max(1, w.QueryBlocks)) }

// Spread is the busiest worker's requests over the mean: 1 is even.
func (w *Workload) Spread() float64 {
	most, all := 0, 0
	for _, n := range w.PerWorker {
		most, all = max(most, n), all+n
	}
	return float64(most) * float64(len(w.PerWorker)) / float64(max(1, all))
}

// BlockOps returns every op's block-ops.
func (w *Workload) BlockOps() int { return w.StoredBlocks + w.RemovedBlocks + w.QueryBlocks }

type cblock struct {
	seq, parent flash.SeqHash
	local       flash.LocalHash
	refs        int
	prev, next  *cblock // LRU list of unreferenced blocks
}

type engine struct {
	w        flash.Worker
	capacity int
	blocks   map[flash.SeqHash]*cblock
	head     cblock // LRU sentinel: head.next is the least recently used
	running  int    // blocks of running requests
	// The CPU cache (capacity 0: none): its blocks (parents as the GPU's
	// record them), in LRU order from cpuHead.next.
	cpuCap  int
	cpu     map[flash.SeqHash]*cblock
	cpuHead cblock
}

func newEngine(w flash.Worker, capacity, cpu int) *engine {
	e := &engine{w: w, capacity: capacity, blocks: map[flash.SeqHash]*cblock{}, cpuCap: cpu, cpu: map[flash.SeqHash]*cblock{}}
	e.head.next, e.head.prev = &e.head, &e.head
	e.cpuHead.next, e.cpuHead.prev = &e.cpuHead, &e.cpuHead
	return e
}

func (e *engine) unlink(b *cblock) {
	b.prev.next, b.next.prev = b.next, b.prev
	b.prev, b.next = nil, nil
}

func (e *engine) pushMRU(b *cblock) { pushBefore(&e.head, b) }

// pushBefore puts b last in the LRU list of sentinel head.
func pushBefore(head, b *cblock) {
	b.prev, b.next = head.prev, head
	head.prev.next = b
	head.prev = b
}

// offload copies block b, evicted from the GPU, to the CPU cache, evicting
// the CPU's least recently used blocks to make room, and returns the
// events: a Removed in tier 1 for those, and a Stored in tier 1 for b
// (none when b is there already, or when its parent is held nowhere, so
// that nothing could reach it).
func (e *engine) offload(b *cblock) (evs []*flash.Event) {
	if c := e.cpu[b.seq]; c != nil {
		e.unlink(c)
		pushBefore(&e.cpuHead, c)
		return nil
	}
	if b.parent != 0 && e.blocks[b.parent] == nil && e.cpu[b.parent] == nil {
		return nil
	}
	var evicted []flash.ExternalHash
	for len(e.cpu) >= e.cpuCap && e.cpuHead.next != &e.cpuHead {
		c := e.cpuHead.next
		e.unlink(c)
		delete(e.cpu, c.seq)
		evicted = append(evicted, flash.ExternalHash(c.seq))
	}
	if len(evicted) > 0 {
		ev := flash.RemovedEvent(e.w, evicted...).InTier(1)
		evs = append(evs, &ev)
	}
	c := &cblock{seq: b.seq, parent: b.parent}
	e.cpu[c.seq] = c
	pushBefore(&e.cpuHead, c)
	ev := flash.StoredEvent(e.w, flash.Block{Hash: flash.ExternalHash(b.seq), Local: b.local})
	if b.parent != 0 {
		ev = ev.WithParent(flash.ExternalHash(b.parent))
	}
	ev = ev.InTier(1)
	return append(evs, &ev)
}

// admit caches the prompt's blocks, returning the request's blocks, the
// number reused from the GPU and, after them, loaded from the CPU cache,
// and the events it caused (a Removed for evictions, after the copies of
// the evicted blocks to the CPU cache; a Stored for new blocks).
func (e *engine) admit(locals []flash.LocalHash, seqs []flash.SeqHash) (held []*cblock, hits, cpuHits int, evs []*flash.Event) {
	for hits < len(seqs) {
		b := e.blocks[seqs[hits]]
		if b == nil {
			break
		}
		if b.refs == 0 {
			e.unlink(b)
		}
		b.refs++
		held = append(held, b)
		hits++
	}
	for hits+cpuHits < len(seqs) && e.cpu[seqs[hits+cpuHits]] != nil {
		c := e.cpu[seqs[hits+cpuHits]]
		e.unlink(c)
		pushBefore(&e.cpuHead, c)
		cpuHits++
	}
	need := len(seqs) - hits
	var evicted []flash.ExternalHash
	for len(e.blocks)+need > e.capacity && e.head.next != &e.head {
		b := e.head.next
		e.unlink(b)
		delete(e.blocks, b.seq)
		if e.cpuCap > 0 {
			evs = append(evs, e.offload(b)...)
		}
		evicted = append(evicted, flash.ExternalHash(b.seq))
	}
	if len(evicted) > 0 {
		ev := flash.RemovedEvent(e.w, evicted...)
		evs = append(evs, &ev)
	}
	fit := min(need, e.capacity-len(e.blocks))
	if fit > 0 {
		blocks := make([]flash.Block, 0, fit)
		for i := hits; i < hits+fit; i++ {
			b := &cblock{seq: seqs[i], local: locals[i], refs: 1}
			if i > 0 {
				b.parent = seqs[i-1]
			}
			e.blocks[b.seq] = b
			held = append(held, b)
			blocks = append(blocks, flash.Block{Hash: flash.ExternalHash(seqs[i]), Local: locals[i]})
		}
		ev := flash.StoredEvent(e.w, blocks...)
		if hits > 0 {
			ev = ev.WithParent(flash.ExternalHash(seqs[hits-1]))
		}
		evs = append(evs, &ev)
	}
	e.running += len(held)
	return held, hits, min(cpuHits, fit), evs
}

// release ends a request: its blocks become evictable, tail first.
func (e *engine) release(held []*cblock) {
	e.running -= len(held)
	for i := len(held) - 1; i >= 0; i-- {
		b := held[i]
		if b.refs--; b.refs == 0 {
			e.pushMRU(b)
		}
	}
}

type finish struct {
	t    int64
	e    *engine
	held []*cblock
}

type finishQueue []finish

func (q finishQueue) Len() int           { return len(q) }
func (q finishQueue) Less(i, j int) bool { return q[i].t < q[j].t }
func (q finishQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *finishQueue) Push(x any)        { *q = append(*q, x.(finish)) }
func (q *finishQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// Record routes reqs across cfg.Workers engines and records the timeline.
// The router's index is a synchronous flash index fed the same events.
func Record(reqs []trace.Request, h *trace.Hasher, cfg Config) *Workload {
	cfg = cfg.norm()
	var now atomic.Int64 // the simulation's clock, the index's too (its expiry timer reads it)
	ic := flash.DefaultConfig()
	ic.MaxWorkers, ic.BlockSize, ic.Clock = cfg.Workers, cfg.BlockSize, func() time.Duration { return time.Duration(now.Load()) }
	tiers := 1
	if cfg.CPUBlocks > 0 {
		ic.Tiers, tiers = []flash.TierSpec{{Name: "GPU"}, {Name: "CPU", Weight: cfg.CPUWeight}}, 2
	}
	idx := flash.New(flash.WithWriters(0), flash.WithConfig(ic))
	defer idx.Close()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	wl := &Workload{BlockSize: cfg.BlockSize, PerWorker: make([]int, cfg.Workers), Tiers: tiers}
	type late struct {
		due int64
		ev  *flash.Event
	}
	var pending []late // events on their way to the index, in order
	engines := make([]*engine, cfg.Workers)
	for i := range engines {
		wl.Workers = append(wl.Workers, flash.Worker{ID: uint64(i)})
		engines[i] = newEngine(wl.Workers[i], cfg.CacheBlocks, cfg.CPUBlocks)
	}
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return reqs[order[a]].Timestamp < reqs[order[b]].Timestamp })
	var fq finishQueue
	var sc flash.Scores
	overlap := make([]float64, cfg.Workers)
	emit := func(t int64, ev *flash.Event) {
		if cfg.Route == RouteEvents || cfg.Route == RouteEventsPredict {
			pending = append(pending, late{t + int64(cfg.EventDelay), ev})
		}
		wl.Ops = append(wl.Ops, Op{T: t, Event: ev})
		wl.Events++
		wl.StoredBlocks += len(ev.Blocks)
		wl.RemovedBlocks += len(ev.Hashes)
	}
	for _, ri := range order {
		r := reqs[ri]
		t := r.Timestamp * 1_000_000
		for fq.Len() > 0 && fq[0].t <= t {
			f := heap.Pop(&fq).(finish)
			f.e.release(f.held)
		}
		locals := h.Locals(nil, r)
		if len(locals) == 0 {
			continue
		}
		now.Store(t)
		k := 0
		for ; k < len(pending) && pending[k].due <= t; k++ {
			_ = idx.Apply(*pending[k].ev)
		}
		pending = pending[k:]
		q := &flash.Query{Locals: locals, Seqs: flash.ChainLocals(nil, locals)}
		if cfg.Route == RouteEventsPredict || cfg.Route == RoutePredict {
			idx.Flush() // drops what expired by now, whatever the expiry timer did
		}
		idx.FindMatches(*q, &sc)
		wl.Ops = append(wl.Ops, Op{T: t, Query: q})
		wl.Queries++
		wl.QueryBlocks += len(locals)
		clear(overlap)
		for _, m := range sc.Matches {
			// The blocks a worker saves the request: its GPU's, and
			// with TierAware its CPU cache's, worth CPUWeight each.
			saved := float64(m.TierDepth[0])
			if cfg.TierAware {
				saved += cfg.CPUWeight * float64(m.TierDepth[tiers-1]-m.TierDepth[0])
			}
			overlap[m.Worker.ID] = saved
		}
		best, bestCost, ties := 0, 0.0, 0
		for i, e := range engines {
			cost := float64(len(locals)) - overlap[i] + cfg.LoadWeight*float64(e.running)
			switch {
			case i == 0 || cost < bestCost:
				best, bestCost, ties = i, cost, 1
			case cost == bestCost:
				ties++
				if rng.IntN(ties) == 0 {
					best = i
				}
			}
		}
		if cfg.Route == RouteRoundRobin {
			best = wl.Queries % cfg.Workers
		}
		if cfg.Route == RouteEventsPredict || cfg.Route == RoutePredict {
			_ = idx.Predict(wl.Workers[best], *q, cfg.PredictTTL)
		}
		wl.PerWorker[best]++
		e := engines[best]
		held, hits, cpuHits, evs := e.admit(locals, q.Seqs)
		wl.HitBlocks += hits
		wl.CPUHitBlocks += cpuHits
		for _, ev := range evs {
			emit(t, ev)
		}
		computed := float64(len(locals)-hits-cpuHits) + float64(cpuHits)/cfg.LoadSpeedup
		prefill := computed * float64(cfg.BlockSize) / cfg.PrefillRate
		decode := float64(r.OutputLength) / cfg.DecodeRate
		heap.Push(&fq, finish{t: t + int64((prefill+decode)*1e9), e: e, held: held})
	}
	if n := len(wl.Ops); n > 0 {
		wl.Span = wl.Ops[n-1].T - wl.Ops[0].T
	}
	wl.compact()
	return wl
}

// compact moves every event and query, and their slices, into a few large
// arrays. A replay keeps the workload live while indexes come and go, and
// each garbage collection marks what is live: tens of thousands of small
// objects cost it milliseconds of CPU per cycle, taken from the index being
// measured; a few arrays cost it next to nothing.
func (wl *Workload) compact() {
	var nev, nq, nb, nh, nl int
	for _, op := range wl.Ops {
		if op.Event != nil {
			nev++
			nb += len(op.Event.Blocks)
			nh += len(op.Event.Hashes)
		} else {
			nq++
			nl += len(op.Query.Locals)
		}
	}
	events := make([]flash.Event, 0, nev)
	queries := make([]flash.Query, 0, nq)
	blocks := make([]flash.Block, 0, nb)
	hashes := make([]flash.ExternalHash, 0, nh)
	locals := make([]flash.LocalHash, 0, nl)
	seqs := make([]flash.SeqHash, 0, nl)
	for i := range wl.Ops {
		op := &wl.Ops[i]
		if op.Event != nil {
			ev := *op.Event
			ev.Blocks = sub(&blocks, ev.Blocks)
			ev.Hashes = sub(&hashes, ev.Hashes)
			events = append(events, ev)
			op.Event = &events[len(events)-1]
		} else {
			q := *op.Query
			q.Locals = sub(&locals, q.Locals)
			q.Seqs = sub(&seqs, q.Seqs)
			queries = append(queries, q)
			op.Query = &queries[len(queries)-1]
		}
	}
}

// sub appends s to *arena (whose capacity suffices) and returns the copy;
// nil stays nil.
func sub[T any](arena *[]T, s []T) []T {
	if s == nil {
		return nil
	}
	n := len(*arena)
	*arena = append(*arena, s...)
	return (*arena)[n:len(*arena):len(*arena)]
}
