package replay

import (
	"fmt"
	"math"
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

// A replay applies every event: the index ends where the model fed the same
// events ends, and a load far below any backend's threshold is sustained;
// with one feeder, and with three feeding a synchronous index's three lanes.
func TestRun_AppliesEverything(t *testing.T) {
	t.Run("feeders=1", func(t *testing.T) {
		testAppliesEverything(t, flash.New(flash.WithMaxWorkers(8), flash.WithWriters(1)), 1)
	})
	t.Run("feeders=3", func(t *testing.T) {
		testAppliesEverything(t, flash.New(flash.WithMaxWorkers(8), flash.WithWriters(0), flash.WithSyncLanes(3)), 3)
	})
}

func testAppliesEverything(t *testing.T, idx *flash.Indexer, feeders int) {
	wl := workload(t, 1500)
	defer idx.Close()
	offered := 3e5
	if raceEnabled {
		offered = 3e4
	}
	r := Run(wl, idx, offered, Options{Feeders: feeders, RecordLatency: true, MeasureRuntime: true})
	if !r.Keeps() || len(r.Latencies) != wl.Queries {
		t.Fatalf("offered %.0f achieved %.0f, %d latencies for %d queries", r.Offered, r.Achieved, len(r.Latencies), wl.Queries)
	}
	m := model.New(flash.Config{MaxWorkers: 8})
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
	offered := 1e5
	if raceEnabled {
		offered = 3e4 // as testAppliesEverything: the detector slows a replay several times
	}
	r := Run(wl, l, offered, Options{Feeders: 3})
	if e := l.err.Load(); e != nil {
		t.Fatal(e)
	}
	for w, due := range l.want {
		if len(due) > 0 {
			t.Fatalf("%v: %d events never applied", w, len(due))
		}
	}
	if !r.Keeps() {
		t.Fatalf("offered %.0f achieved %.0f", r.Offered, r.Achieved)
	}
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

// Past the threshold the achieved load stops following the offered one.
func TestSweep_FindsThreshold(t *testing.T) {
	wl := workload(t, 600)
	pts, th := Sweep(wl, func() flash.Index { return model.New(flash.Config{MaxWorkers: 8}) }, 1e5, 4, 1e10, 0, 2, Options{}, nil)
	if th <= 0 || pts[len(pts)-1].Keeps() {
		t.Fatalf("no threshold found: %v", pts)
	}
	// The bisection adds two points between the highest sustained load and
	// the next one, and the points come back in order.
	var lo, hi float64
	for i, p := range pts {
		if i > 0 && p.Offered <= pts[i-1].Offered {
			t.Fatalf("points out of order: %v", pts)
		}
		if p.Keeps() {
			lo = p.Offered
		}
	}
	for _, p := range pts {
		if p.Offered > lo && !p.Keeps() {
			hi = p.Offered
			break
		}
	}
	if hi/lo > math.Pow(4, 0.25)*1.0001 {
		t.Fatalf("threshold bracket %.0f..%.0f wider than 4^(1/4): %v", lo, hi, pts)
	}
}

// stalled is an index whose Flush stalls once, as a run does when another
// tenant of a shared machine takes the CPU.
type stalled struct {
	flash.Index
	stall time.Duration
}

func (s stalled) Flush() {
	s.Index.Flush()
	time.Sleep(s.stall)
}

// A load that fails once through interference and then holds counts as
// sustained: it is measured again, and the better measurement is its point.
func TestSweep_RetriesAFailedLoad(t *testing.T) {
	wl := workload(t, 300)
	const offered = 1e5 // far below the model's threshold: about 70 ms per run
	made := 0
	f := func() flash.Index {
		made++
		ix := model.New(flash.Config{MaxWorkers: 8})
		if made == 2 { // the first measured replay (the first is the warm-up)
			return stalled{ix, time.Second}
		}
		return ix
	}
	pts, th := Sweep(wl, f, offered, 4, offered, 0, 0, Options{}, nil)
	if made != 4 || len(pts) != 1 || !pts[0].Keeps() || th <= 0 {
		t.Fatalf("%d indexes made, points %v, threshold %.0f: the stalled run was not measured again", made, pts, th)
	}
}

// Repeat replays once unmeasured before it measures: a stall in that
// replay changes nothing in the result.
func TestRepeat_WarmsUpUnmeasured(t *testing.T) {
	wl := workload(t, 300)
	const offered = 1e5
	made := 0
	f := func() flash.Index {
		made++
		ix := model.New(flash.Config{MaxWorkers: 8})
		if made == 1 {
			return stalled{ix, time.Second}
		}
		return ix
	}
	r := Repeat(wl, f, offered, 0, Options{})
	if made != 2 || !r.Keeps() || r.Ops != len(wl.Ops) {
		t.Fatalf("%d indexes made, %d ops measured (workload %d), offered %.0f achieved %.0f", made, r.Ops, len(wl.Ops), r.Offered, r.Achieved)
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
