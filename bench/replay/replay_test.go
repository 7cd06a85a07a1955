package replay

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/bench/sim"
	"github.com/flashindexer/flashindexer/bench/trace"
	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/model"
)

func workload(t *testing.T, n int) *sim.Workload {
	reqs, err := trace.Load("")
	if err != nil {
		t.Fatal(err)
	}
	h, _ := trace.NewHasher(512)
	return sim.Record(reqs[:n], h, sim.Config{Workers: 8, CacheBlocks: 1024})
}

// A replay applies every event and answers every query: the index ends where
// the model fed the same events ends, and the result counts what was done
// and divides it by the time it took; with one feeder, and with three
// feeding a synchronous index's three lanes. Nothing here depends on how fast
// the machine is: a late op runs when its feeder gets to it.
func TestRun_AppliesEverything(t *testing.T) {
	t.Run("feeders=1", func(t *testing.T) {
		testAppliesEverything(t, flash.New(flash.WithMaxWorkers(8), flash.WithWriters(1)), 1)
	})
	t.Run("feeders=3", func(t *testing.T) {
		testAppliesEverything(t, flash.New(flash.WithMaxWorkers(8), flash.WithWriters(0), flash.WithSyncLanes(3)), 3)
	})
}

// checkResult checks what a result of runs replays of wl computes from its
// counts and its clock.
func checkResult(t *testing.T, r Result, wl *sim.Workload, runs int) {
	t.Helper()
	if r.Ops != runs*len(wl.Ops) || r.BlockOps != runs*wl.BlockOps() || r.Elapsed <= 0 {
		t.Fatalf("%d ops, %d block-ops in %v; want %d runs of %d ops, %d block-ops", r.Ops, r.BlockOps, r.Elapsed, runs, len(wl.Ops), wl.BlockOps())
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(math.Abs(a), math.Abs(b)) }
	if s := r.Elapsed.Seconds(); !near(r.Achieved, float64(r.BlockOps)/s) || !near(r.AchievedOps, float64(r.Ops)/s) {
		t.Fatalf("achieved %v block-ops/s, %v ops/s for %d block-ops, %d ops in %v", r.Achieved, r.AchievedOps, r.BlockOps, r.Ops, r.Elapsed)
	}
	if r.Keeps() != (r.Achieved >= KeepRatio*r.Offered) {
		t.Fatalf("Keeps() %v: offered %v achieved %v", r.Keeps(), r.Offered, r.Achieved)
	}
}

func testAppliesEverything(t *testing.T, idx *flash.Indexer, feeders int) {
	wl := workload(t, 1500)
	defer idx.Close()
	r := Run(wl, idx, 3e5, Options{Feeders: feeders, RecordLatency: true, MeasureRuntime: true})
	checkResult(t, r, wl, 1)
	if len(r.Latencies) != wl.Queries || !slices.IsSorted(r.Latencies) {
		t.Fatalf("%d latencies for %d queries (ascending: %v)", len(r.Latencies), wl.Queries, slices.IsSorted(r.Latencies))
	}
	if r.AllocsPerOp < 0 || r.GCShare < 0 || r.GCShare > 1 {
		t.Fatalf("allocations per op %v, GC share %v", r.AllocsPerOp, r.GCShare)
	}
	m := checkHolds(t, wl, idx)
	var sa, sb flash.Scores
	for _, op := range wl.Ops[len(wl.Ops)-200:] {
		if op.Query == nil {
			continue
		}
		idx.FindMatches(*op.Query, &sa)
		m.FindMatches(*op.Query, &sb)
		sa.Sort()
		sb.Sort()
		if len(sa.Matches) != len(sb.Matches) {
			t.Fatalf("final answers differ: %v vs %v", sa.Matches, sb.Matches)
		}
	}
}

// lanes is an index of 3 lanes (worker ID mod 3) that checks what feeders
// do: each worker's events arrive in workload order, and never two calls at
// once in one lane.
type lanes struct {
	flash.Index
	mu   sync.Mutex
	want map[flash.Worker][]string // each worker's events still due, in order
	busy [3]atomic.Bool
	err  atomic.Value
}

func (l *lanes) Lanes() int           { return 3 }
func (l *lanes) LaneOf(id uint64) int { return int(id % 3) }

func (l *lanes) Apply(ev flash.Event) error {
	lane := &l.busy[l.LaneOf(ev.Worker.ID)]
	if lane.Swap(true) {
		l.err.CompareAndSwap(nil, fmt.Sprintf("two feeders at once in the lane of %v", ev.Worker))
	}
	time.Sleep(20 * time.Microsecond) // long enough for another feeder to run into it
	lane.Store(false)
	l.mu.Lock()
	if w := l.want[ev.Worker]; len(w) == 0 || w[0] != fmt.Sprint(ev) {
		l.err.CompareAndSwap(nil, fmt.Sprintf("%v: an event out of order", ev.Worker))
	} else {
		l.want[ev.Worker] = w[1:]
	}
	l.mu.Unlock()
	return l.Index.Apply(ev)
}

// Feeders take the workers of an index's lanes when there are as many, and
// keep each worker's events in order.
func TestRun_FeedersFollowLanes(t *testing.T) {
	wl := workload(t, 600)
	l := &lanes{Index: model.New(flash.Config{MaxWorkers: 8}), want: map[flash.Worker][]string{}}
	for _, op := range wl.Ops {
		if op.Event != nil {
			l.want[op.Event.Worker] = append(l.want[op.Event.Worker], fmt.Sprint(*op.Event))
		}
	}
	r := Run(wl, l, 1e5, Options{Feeders: 3})
	if e := l.err.Load(); e != nil {
		t.Fatal(e)
	}
	for w, due := range l.want {
		if len(due) > 0 {
			t.Fatalf("%v: %d events never applied", w, len(due))
		}
	}
	checkResult(t, r, wl, 1)
	// The hash partition (no lanes, or not as many) uses every feeder.
	f := partition(model.New(flash.Config{MaxWorkers: 8}), 3)
	used := map[int]bool{}
	for _, w := range wl.Workers {
		used[f(w.ID)] = true
	}
	if len(used) != 3 {
		t.Fatalf("8 workers on %d of 3 feeders", len(used))
	}
}

// capacity measures a load as a backend that sustains at most c block-ops/s
// would: the Sweep tests plan on it without a clock.
func capacity(c float64) func(float64) Result {
	return func(load float64) Result { return Result{Offered: load, Achieved: min(load, c), Elapsed: time.Second} }
}

// Past the threshold the achieved load stops following the offered one:
// the sweep grows the load until two in a row are not sustained, then
// bisects between the highest sustained load and the next.
func TestSweep_FindsThreshold(t *testing.T) {
	var progress []Result
	pts, th := SweepWith(capacity(37000), 1e3, 4, 1e10, 2, func(r Result) { progress = append(progress, r) })
	// 1k, 4k, 16k and then 64k (37k of it), 256k; between 16k and 64k: 32k
	// sustained, 45k not.
	if th != 32000 || len(pts) != 7 || pts[len(pts)-1].Keeps() {
		t.Fatalf("threshold %.0f, points %v", th, pts)
	}
	if len(progress) != len(pts) {
		t.Fatalf("%d points reported, %d returned", len(progress), len(pts))
	}
	checkBracket(t, pts, th, math.Pow(4, 0.25))
}

// checkBracket checks Sweep's points: in order of offered load, the
// threshold the best sustained achieved load, and the highest sustained
// load and the first one above it not sustained at most ratio apart.
func checkBracket(t *testing.T, pts []Result, th, ratio float64) {
	t.Helper()
	var lo, hi, best float64
	for i, p := range pts {
		if i > 0 && p.Offered <= pts[i-1].Offered {
			t.Fatalf("points out of order: %v", pts)
		}
		if p.Keeps() {
			lo, best = p.Offered, max(best, p.Achieved)
		}
	}
	if best != th {
		t.Fatalf("threshold %.0f, best sustained %.0f: %v", th, best, pts)
	}
	for _, p := range pts {
		if p.Offered > lo && !p.Keeps() {
			hi = p.Offered
			break
		}
	}
	if lo == 0 || hi == 0 || hi/lo > ratio*1.0001 {
		t.Fatalf("threshold bracket %.0f..%.0f wider than %v: %v", lo, hi, ratio, pts)
	}
}

// Sweep replays the workload on fresh indexes, one measured replay per
// point with no minimum time, and returns what Sweeper settles: the points
// in order, each a whole replay, the threshold the best sustained one.
// How far the loads get depends on the machine; what each point holds does
// not.
func TestSweep_ReplaysEachLoad(t *testing.T) {
	wl := workload(t, 300)
	made := 0
	f := func() flash.Index { made++; return model.New(flash.Config{MaxWorkers: 8}) }
	pts, th := Sweep(wl, f, 1e5, 4, 1e10, 0, 1, Options{}, nil)
	if len(pts) == 0 || pts[len(pts)-1].Keeps() && pts[len(pts)-1].Offered*4 <= 1e10 {
		t.Fatalf("the sweep stopped at a sustained load: %v", pts)
	}
	best := 0.0
	for i, p := range pts {
		checkResult(t, p, wl, 1)
		if i > 0 && p.Offered <= pts[i-1].Offered {
			t.Fatalf("points out of order: %v", pts)
		}
		if p.Keeps() {
			best = max(best, p.Achieved)
		}
	}
	if best != th {
		t.Fatalf("threshold %.0f, best sustained %.0f", th, best)
	}
	// Two indexes a measurement (warm-up, measured), a load not sustained
	// measured twice.
	if made < 2*len(pts) || made%2 != 0 {
		t.Fatalf("%d indexes made for %d points", made, len(pts))
	}
}

// A load that fails once through interference and then holds counts as
// sustained: it is measured again, and the better measurement is its point.
func TestSweep_RetriesAFailedLoad(t *testing.T) {
	calls := 0
	full := capacity(1e6)
	measure := func(load float64) Result {
		calls++
		if calls == 1 { // a stall: a tenth of the load achieved
			return Result{Offered: load, Achieved: load / 10, Elapsed: time.Second}
		}
		return full(load)
	}
	pts, th := SweepWith(measure, 1e5, 4, 1e5, 0, nil)
	if calls != 2 || len(pts) != 1 || !pts[0].Keeps() || th != 1e5 {
		t.Fatalf("%d measurements, points %v, threshold %.0f: the stalled load was not measured again", calls, pts, th)
	}
	// Two failures in a row: the load is not sustained, and its point is the
	// better of the two.
	calls = 0
	pts, th = SweepWith(func(load float64) Result {
		calls++
		return Result{Offered: load, Achieved: load / float64(10*calls), Elapsed: time.Second}
	}, 1e5, 4, 1e5, 0, nil)
	if calls != 2 || len(pts) != 1 || pts[0].Keeps() || pts[0].Achieved != 1e4 || th != 0 {
		t.Fatalf("%d measurements, points %v, threshold %.0f", calls, pts, th)
	}
}

// stalled is an index whose Flush stalls, as a run does when another tenant
// of a shared machine takes the CPU, and notes when it ended.
type stalled struct {
	flash.Index
	stall time.Duration
	end   time.Time
}

func (s *stalled) Flush() {
	s.Index.Flush()
	time.Sleep(s.stall)
	s.end = time.Now()
}

// Repeat replays once unmeasured before it measures: the warm-up's time is
// not in the result, nor are its ops.
func TestRepeat_WarmsUpUnmeasured(t *testing.T) {
	wl := workload(t, 300)
	made := 0
	st := &stalled{stall: 200 * time.Millisecond}
	f := func() flash.Index {
		made++
		ix := model.New(flash.Config{MaxWorkers: 8})
		if made == 1 {
			st.Index = ix
			return st
		}
		return ix
	}
	r := Repeat(wl, f, 1e5, 0, Options{})
	if made != 2 || st.end.IsZero() {
		t.Fatalf("%d indexes made, warm-up flushed: %v", made, !st.end.IsZero())
	}
	checkResult(t, r, wl, 1)
	// The measured replay began after the warm-up's stall ended.
	if since := time.Since(st.end); r.Elapsed > since {
		t.Fatalf("measured %v, but the warm-up ended only %v ago", r.Elapsed, since)
	}
}

// Sweepers taking turns plan exactly what each plans alone: a load not
// sustained is asked for twice in a row, and the threshold is bracketed to
// within step^(1/2^refine).
func TestSweeper_Interleaved(t *testing.T) {
	capacity := []float64{1000, 37000}
	measure := func(i int, load float64) Result {
		return Result{Offered: load, Achieved: min(load, capacity[i])}
	}
	alone := make([][]float64, len(capacity))
	sws := make([]*Sweeper, len(capacity))
	for i := range capacity {
		sw := NewSweeper(100, 2, 1e9, 3)
		for load, ok := sw.Next(); ok; load, ok = sw.Next() {
			alone[i] = append(alone[i], load)
			sw.Record(measure(i, load))
		}
		sws[i] = sw
	}
	together := make([][]float64, len(capacity))
	turns := []*Sweeper{NewSweeper(100, 2, 1e9, 3), NewSweeper(100, 2, 1e9, 3)}
	for busy := true; busy; {
		busy = false
		for i, sw := range turns {
			if load, ok := sw.Next(); ok {
				busy = true
				together[i] = append(together[i], load)
				sw.Record(measure(i, load))
			}
		}
	}
	for i := range capacity {
		if fmt.Sprint(alone[i]) != fmt.Sprint(together[i]) {
			t.Fatalf("sweep %d: alone %v, taking turns %v", i, alone[i], together[i])
		}
		if a, b := turns[i].Threshold(), sws[i].Threshold(); a != b || a <= 0 {
			t.Fatalf("sweep %d: thresholds %.0f and %.0f", i, a, b)
		}
		// Every load not sustained was asked for twice in a row.
		asked := map[float64]int{}
		for _, l := range alone[i] {
			asked[l]++
		}
		var lo, hi float64
		for _, p := range turns[i].Points() {
			want := 1
			if !p.Keeps() {
				want = 2
				if hi == 0 || p.Offered < hi {
					hi = p.Offered
				}
			} else {
				lo = max(lo, p.Offered)
			}
			if asked[p.Offered] != want {
				t.Fatalf("sweep %d: load %.0f asked %d times, want %d", i, p.Offered, asked[p.Offered], want)
			}
		}
		if hi/lo > math.Pow(2, 1.0/8)*1.0001 {
			t.Fatalf("sweep %d: threshold bracket %.0f..%.0f wider than 2^(1/8)", i, lo, hi)
		}
	}
}

// The steady state starts after the op at which the last worker to fill
// its cache evicts for the first time: before it some worker has not
// evicted yet, and from it on each has. Steady counts the events from it
// and applies every event: its index ends holding what the model holds.
func TestSteady_FromEveryCacheFull(t *testing.T) {
	reqs, err := trace.Load("")
	if err != nil {
		t.Fatal(err)
	}
	h, _ := trace.NewHasher(512)
	wl := sim.Record(reqs[:2000], h, sim.Config{Workers: 4, CacheBlocks: 256})
	from, ok := SteadyFrom(wl)
	if !ok {
		t.Fatal("no steady state: the caches should fill")
	}
	evicted := map[flash.Worker]bool{}
	events := 0
	for i, op := range wl.Ops {
		if i == from-1 && (op.Event == nil || op.Event.Kind != flash.KindRemoved || evicted[op.Event.Worker]) {
			t.Fatalf("op %d is not a worker's first eviction", i)
		}
		if i == from && len(evicted) != len(wl.Workers) {
			t.Fatalf("steady from op %d, when %d of %d workers have evicted", from, len(evicted), len(wl.Workers))
		}
		if op.Event != nil {
			if op.Event.Kind == flash.KindRemoved {
				evicted[op.Event.Worker] = true
			}
			if i >= from {
				events++
			}
		}
		if i == from-2 && len(evicted) == len(wl.Workers) {
			t.Fatalf("every worker has evicted before op %d", from-1)
		}
	}
	var ix *flash.Indexer
	n, _, _ := Steady(wl, func() flash.Index { ix = flash.New(flash.WithWriters(0), flash.WithMaxWorkers(4)); return ix })
	if n != events || events == 0 {
		t.Fatalf("Steady counted %d events, want %d", n, events)
	}
	checkHolds(t, wl, ix)

	// A fleet whose caches never fill has no steady state.
	if _, ok := SteadyFrom(sim.Record(reqs[:200], h, sim.Config{Workers: 4, CacheBlocks: 1 << 20})); ok {
		t.Fatal("steady state without an eviction")
	}
}

// checkHolds feeds wl's events to the model and fails unless idx holds as
// many blocks of every worker as the model does; it returns the model.
func checkHolds(t *testing.T, wl *sim.Workload, idx flash.Index) *model.Model {
	t.Helper()
	m := model.New(flash.Config{MaxWorkers: len(wl.Workers)})
	for _, op := range wl.Ops {
		if op.Event != nil {
			_ = m.Apply(*op.Event)
		}
	}
	for _, w := range wl.Workers {
		if a, b := idx.BlockCount(w), m.BlockCount(w); a != b {
			t.Fatalf("worker %v: %d blocks after replay, model %d", w, a, b)
		}
	}
	return m
}
