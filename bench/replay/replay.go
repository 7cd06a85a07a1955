// Package replay replays a recorded workload against an index on one
// timeline compressed to a target offered load, and measures what it
// achieves: events go through Apply from feeder goroutines, each worker's
// events in order on one feeder (sticky, as a router's event goroutine per
// engine has them), and the index's own writers apply them if it has any;
// queries come from reader goroutines; each operation no earlier than its
// time on the compressed timeline. Throughput is drain-inclusive: the clock
// stops after Flush.
package replay

import (
	"cmp"
	"math"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"time"

	"github.com/flashindexer/flashindexer/bench/sim"
	"github.com/flashindexer/flashindexer/flash"
)

// Result is one replay.
type Result struct {
	Offered     float64 // block-ops/s asked for
	Achieved    float64 // block-ops/s done, drain-inclusive
	AchievedOps float64 // ops/s (events plus queries)
	Elapsed     time.Duration
	BlockOps    int
	Ops         int
	// Latencies of every FindMatches, when recorded, ascending.
	Latencies []time.Duration
	// AllocsPerOp counts heap allocations of the whole process per op.
	AllocsPerOp float64
	// GCShare is the garbage collector's share of the process's CPU time.
	GCShare float64
}

// Keeps reports whether the replay kept up with the offered load.
func (r Result) Keeps() bool { return r.Achieved >= KeepRatio*r.Offered }

// KeepRatio: a load is sustained when at least 90% of it is achieved; past
// the threshold achieved throughput flattens while offered keeps growing.
const KeepRatio = 0.9

// Options tune a replay.
type Options struct {
	Readers        int  // query goroutines (default 2)
	Feeders        int  // event goroutines, each with its share of the workers (default 1)
	RecordLatency  bool // time every FindMatches
	MeasureRuntime bool // allocations and GC share (reads runtime stats around the run)
}

// Run replays wl against idx at offered block-ops/s.
func Run(wl *sim.Workload, idx flash.Index, offered float64, o Options) Result {
	readers := max(1, o.Readers)
	if o.Readers == 0 {
		readers = 2
	}
	total := wl.BlockOps()
	duration := float64(total) / offered // seconds
	scale := 1.0
	if wl.Span > 0 {
		scale = duration * 1e9 / float64(wl.Span)
	}
	t0 := wl.Ops[0].T
	due := func(t int64) time.Duration { return time.Duration(float64(t-t0) * scale) }

	// Split ops: a worker's events stay in order on its feeder; queries
	// round-robin.
	feeders := max(1, o.Feeders)
	feederOf := partition(idx, feeders)
	events := make([][]*sim.Op, feeders)
	queries := make([][]*sim.Op, readers)
	nq := 0
	for i := range wl.Ops {
		op := &wl.Ops[i]
		if op.Event != nil {
			f := feederOf(op.Event.Worker.ID)
			events[f] = append(events[f], op)
		} else {
			queries[nq%readers] = append(queries[nq%readers], op)
			nq++
		}
	}
	lat := make([][]time.Duration, readers)
	var ms0 runtime.MemStats
	var gc0, cpu0 float64
	if o.MeasureRuntime {
		runtime.GC()
		runtime.ReadMemStats(&ms0)
		gc0, cpu0 = gcCPU()
	}
	var wg sync.WaitGroup
	start := time.Now()
	for f := range feeders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, op := range events[f] {
				wait(start, due(op.T))
				_ = idx.Apply(*op.Event)
			}
		}()
	}
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sc flash.Scores
			if o.RecordLatency {
				lat[r] = make([]time.Duration, 0, len(queries[r]))
			}
			for _, op := range queries[r] {
				wait(start, due(op.T))
				if o.RecordLatency {
					t := time.Now()
					idx.FindMatches(*op.Query, &sc)
					lat[r] = append(lat[r], time.Since(t))
				} else {
					idx.FindMatches(*op.Query, &sc)
				}
			}
		}()
	}
	wg.Wait()
	idx.Flush()
	elapsed := time.Since(start)
	res := Result{Offered: offered, Elapsed: elapsed, BlockOps: total, Ops: len(wl.Ops)}
	res.Achieved = float64(total) / elapsed.Seconds()
	res.AchievedOps = float64(len(wl.Ops)) / elapsed.Seconds()
	if o.RecordLatency {
		for _, l := range lat {
			res.Latencies = append(res.Latencies, l...)
		}
		slices.Sort(res.Latencies)
	}
	if o.MeasureRuntime {
		var ms1 runtime.MemStats
		runtime.ReadMemStats(&ms1)
		gc1, cpu1 := gcCPU()
		res.AllocsPerOp = float64(ms1.Mallocs-ms0.Mallocs) / float64(len(wl.Ops))
		if cpu1 > cpu0 {
			res.GCShare = (gc1 - gc0) / (cpu1 - cpu0)
		}
	}
	return res
}

// Laned is an index that applies events in lanes, each worker's in one
// (flash.Indexer): callers applying from one goroutine per lane never wait
// for each other.
type Laned interface {
	Lanes() int
	LaneOf(id uint64) int
}

// partition returns the feeder of each worker ID: its lane when the index
// has as many lanes as there are feeders, else flash.LaneFor's spread of
// the IDs over the feeders.
func partition(idx flash.Index, feeders int) func(id uint64) int {
	if l, ok := idx.(Laned); ok && l.Lanes() == feeders {
		return l.LaneOf
	}
	return func(id uint64) int { return flash.LaneFor(id, feeders) }
}

// wait returns no earlier than start+at. It sleeps rather than spins: on a
// small machine a spinning feeder takes the CPU from the index it measures.
// A timer may wake it late by tens of microseconds; the ops that fell due
// meanwhile then run back to back, so the rate over the run is unchanged
// and only the drain at the end can grow by one timer slack.
func wait(start time.Time, at time.Duration) {
	for {
		left := at - time.Since(start)
		if left <= 0 {
			return
		}
		time.Sleep(left)
	}
}

func gcCPU() (gc, total float64) {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/total:cpu-seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64(), s[1].Value.Float64()
}

// Quantile returns the q-quantile of ascending latencies.
func Quantile(lat []time.Duration, q float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	i := int(q * float64(len(lat)-1))
	return lat[i]
}

// Factory makes a fresh index for one replay.
type Factory func() flash.Index

// Repeat replays wl on fresh indexes at one offered load until at least
// minTime has been measured, and sums the runs: a short workload at a high
// load would otherwise be measured over a few milliseconds.
//
// The measured replays find the heap as this backend's own replays leave
// it, whatever ran before: Repeat first collects the heap (the sweeps of a
// run take turns, and another backend's dropped indexes, or a collection
// it started, would otherwise be paid for on this backend's clock), then
// replays once unmeasured, so that the collector's pacing is the one the
// backend's replays set for each other, as in a run of it alone.
func Repeat(wl *sim.Workload, f Factory, offered float64, minTime time.Duration, o Options) Result {
	runtime.GC()
	warm := f()
	Run(wl, warm, offered, Options{Readers: o.Readers, Feeders: o.Feeders})
	_ = warm.Close()
	var sum Result
	for sum.Elapsed < minTime || sum.Ops == 0 {
		idx := f()
		r := Run(wl, idx, offered, o)
		_ = idx.Close()
		sum.Elapsed += r.Elapsed
		sum.BlockOps += r.BlockOps
		sum.Ops += r.Ops
	}
	sum.Offered = offered
	sum.Achieved = float64(sum.BlockOps) / sum.Elapsed.Seconds()
	sum.AchievedOps = float64(sum.Ops) / sum.Elapsed.Seconds()
	return sum
}

// Sweep replays wl on fresh indexes at offered loads from start, growing by
// step, until two loads in a row are not sustained or max is passed; each
// load is measured for at least minTime. Then it bisects (geometrically)
// refine times between the highest sustained load and the next one, so the
// threshold is known to within step^(1/2^refine). A load that is not
// sustained is measured twice and keeps the better measurement. It returns
// every point, in order of offered load, and the threshold: the highest
// sustained achieved load.
func Sweep(wl *sim.Workload, f Factory, start, step, maxLoad float64, minTime time.Duration, refine int, o Options, progress func(Result)) (points []Result, threshold float64) {
	measure := func(load float64) Result { return Repeat(wl, f, load, minTime, o) }
	return SweepWith(measure, start, step, maxLoad, refine, progress)
}

// SweepWith is Sweep over any measurement of an offered load.
func SweepWith(measure func(offered float64) Result, start, step, maxLoad float64, refine int, progress func(Result)) (points []Result, threshold float64) {
	sw := NewSweeper(start, step, maxLoad, refine)
	for load, ok := sw.Next(); ok; load, ok = sw.Next() {
		if p, done := sw.Record(measure(load)); done && progress != nil {
			progress(p)
		}
	}
	return sw.Points(), sw.Threshold()
}

// Sweeper plans Sweep's measurements one at a time, so that the sweeps of
// several indexes can take turns (each measuring one load, then the next
// index) and share whatever the machine does meanwhile: the ratio of two
// thresholds is then not the ratio of two different minutes.
type Sweeper struct {
	step, maxLoad float64
	refine        int
	load          float64 // the load to measure next
	misses        int     // loads in a row not sustained, while growing
	bisecting     bool    // growing is over
	bisected      int
	lo, hi        float64 // highest sustained offered load, the first one above it not sustained
	first         *Result // a load's first measurement, not sustained: it is measured again
	threshold     float64
	points        []Result
	done          bool
}

// NewSweeper plans a sweep from start (see Sweep).
func NewSweeper(start, step, maxLoad float64, refine int) *Sweeper {
	return &Sweeper{step: step, maxLoad: maxLoad, refine: refine, load: start, done: start > maxLoad}
}

// Next returns the offered load to measure next, or false when the sweep is
// over.
func (s *Sweeper) Next() (float64, bool) { return s.load, !s.done }

// Record takes the measurement of the load Next returned. It returns the
// load's point and true once the load is settled (a load not sustained is
// asked for twice, and keeps the better of its two measurements).
func (s *Sweeper) Record(r Result) (Result, bool) {
	if !r.Keeps() && s.first == nil {
		// Interference on a shared machine only ever slows a run down: a
		// load counts as not sustained when a second measurement agrees.
		s.first = &r
		return Result{}, false
	}
	if s.first != nil {
		if s.first.Achieved > r.Achieved {
			r = *s.first
		}
		s.first = nil
	}
	s.points = append(s.points, r)
	if r.Keeps() {
		s.threshold = max(s.threshold, r.Achieved)
	}
	if !s.bisecting {
		if r.Keeps() {
			s.lo, s.hi, s.misses = s.load, 0, 0
		} else {
			if s.hi == 0 {
				s.hi = s.load
			}
			s.misses++
		}
		if next := s.load * s.step; next <= s.maxLoad && s.misses < 2 {
			s.load = next
			return r, true
		}
		s.bisecting = true
	} else {
		if r.Keeps() {
			s.lo = s.load
		} else {
			s.hi = s.load
		}
		s.bisected++
	}
	if s.bisected < s.refine && s.lo > 0 && s.hi > 0 {
		s.load = math.Sqrt(s.lo * s.hi)
		return r, true
	}
	s.done = true
	return r, true
}

// Points returns every settled point, in order of offered load.
func (s *Sweeper) Points() []Result {
	pts := slices.Clone(s.points)
	slices.SortFunc(pts, func(a, b Result) int { return cmp.Compare(a.Offered, b.Offered) })
	return pts
}

// Threshold returns the highest sustained achieved load so far.
func (s *Sweeper) Threshold() float64 { return s.threshold }

// SteadyFrom returns the index in wl.Ops of the first op after which every
// worker that evicts has evicted (its cache was full): the fleet's steady
// state, where stores and removes balance. ok is false when no worker
// evicts or a worker that stores never does (its cache never filled).
func SteadyFrom(wl *sim.Workload) (from int, ok bool) {
	stores := map[flash.Worker]bool{}
	full := map[flash.Worker]bool{}
	for i, op := range wl.Ops {
		if ev := op.Event; ev != nil {
			stores[ev.Worker] = true
			if ev.Kind == flash.KindRemoved && !full[ev.Worker] {
				full[ev.Worker] = true
				from = i + 1
			}
		}
	}
	return from, len(full) > 0 && len(full) == len(stores)
}

// Steady applies wl's events in order to a fresh index from f, on one
// goroutine, and counts the heap allocations of the whole process over the
// events of its steady state (SteadyFrom), and over the second half of
// them, when the index has settled: its tables have reached the sizes the
// churning content needs. events is 0 when wl has no steady state.
func Steady(wl *sim.Workload, f Factory) (events int, allocs, lateAllocs uint64) {
	from, ok := SteadyFrom(wl)
	if !ok {
		return 0, 0, 0
	}
	for _, op := range wl.Ops[from:] {
		if op.Event != nil {
			events++
		}
	}
	idx := f()
	defer idx.Close()
	mallocs := func() uint64 {
		var ms runtime.MemStats
		idx.Flush()
		runtime.ReadMemStats(&ms)
		return ms.Mallocs
	}
	var m0, mHalf uint64
	n := 0
	for i, op := range wl.Ops {
		if i == from {
			m0 = mallocs()
		}
		if op.Event == nil {
			continue
		}
		if i >= from {
			if n == events/2 {
				mHalf = mallocs()
			}
			n++
		}
		_ = idx.Apply(*op.Event)
	}
	end := mallocs()
	return events, end - m0, end - mHalf
}
