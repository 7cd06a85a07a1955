package storefind

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/bench/trace"
	"github.com/flashindexer/flashindexer/flash"
)

// widths are the fleets the benchmarks measure, in workers.
var widths = []int{16, 96, 128, 256, 1024, 4096}

var (
	loadOnce sync.Once
	reqs     []trace.Request
	loadErr  error
	built    = map[string]*Workload{}
)

// workload returns the trace's workload for w workers, built once.
func workload(tb testing.TB, w int, delta bool) *Workload {
	tb.Helper()
	loadOnce.Do(func() { reqs, loadErr = trace.Load("") })
	if loadErr != nil {
		tb.Fatal(loadErr)
	}
	key := fmt.Sprint(w, delta)
	if wl := built[key]; wl != nil {
		return wl
	}
	wl, err := Build(reqs, w, delta)
	if err != nil {
		tb.Fatal(err)
	}
	built[key] = wl
	return wl
}

// newFlash is storefind.NewFlash for the benchmarks: a hint of -n is n
// blocks made ahead (hint=reserved, flash.WithReservedCapacity), which the
// nested map and the sketch take as n (they have no other way to presize).
func newFlash(wl *Workload, hint int) *flash.Indexer {
	ix, err := NewFlash(wl, abs(hint), hint < 0)
	if err != nil {
		panic(err)
	}
	return ix
}

// store is one implementation's way to build the whole workload: make an
// empty index, fill it with every event, release it.
type store struct {
	name  string
	make  func(wl *Workload, hint int) any
	fill  func(v any, wl *Workload, hint int)
	close func(any)
}

func (s store) build(wl *Workload, hint int) any {
	v := s.make(wl, hint)
	s.fill(v, wl, hint)
	return v
}

var stores = []store{
	{"flash", func(wl *Workload, hint int) any { return newFlash(wl, hint) }, func(v any, wl *Workload, _ int) {
		ix := v.(*flash.Indexer)
		for i := range wl.Events {
			if err := ix.Apply(wl.Events[i]); err != nil {
				panic(err)
			}
		}
	}, func(v any) { v.(*flash.Indexer).Close() }},
	{"naive", func(wl *Workload, hint int) any { return NewNaive(wl, abs(hint)) }, func(v any, wl *Workload, hint int) {
		n := v.(Naive)
		for i := range wl.Events {
			n.Store(wl, i, abs(hint))
		}
	}, func(any) {}},
	{"sketch", func(wl *Workload, hint int) any { return NewSketch(wl, abs(hint)) }, func(v any, wl *Workload, _ int) {
		s := v.(*Sketch)
		for i := range wl.Events {
			s.Store(&wl.Events[i])
		}
	}, func(any) {}},
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkStore builds the trace's index from empty, or with every worker
// declared with the most blocks a worker holds as its capacity (hint=yes;
// hint=reserved: its state made ahead, where the map is presized for it
// either way): block-ops/s
// (blocks in events per second), live heap per (block, worker) pair after a
// collection (and for Flash, by part: Indexer.Memory), and allocations per
// event (those of filling an empty index: making it is outside the timer
// and the count).
func BenchmarkStore(b *testing.B) {
	for _, w := range widths {
		for _, ev := range []string{"full", "delta"} {
			for _, hinted := range []string{"no", "yes", "reserved"} {
				for _, s := range stores {
					b.Run(fmt.Sprintf("w=%d/ev=%s/hint=%s/impl=%s", w, ev, hinted, s.name), func(b *testing.B) {
						wl := workload(b, w, ev == "delta")
						hint := map[string]int{"yes": wl.Capacity, "reserved": -wl.Capacity}[hinted]
						// Memory of one build, measured outside the timer.
						before := liveHeap()
						v := s.build(wl, hint)
						live := liveHeap() - before
						var parts flash.Memory
						if ix, ok := v.(*flash.Indexer); ok {
							parts = ix.Memory()
						}
						s.close(v)
						v = nil

						var ms runtime.MemStats
						var mallocs uint64
						for b.Loop() {
							b.StopTimer()
							v = s.make(wl, hint)
							runtime.ReadMemStats(&ms)
							m0 := ms.Mallocs
							b.StartTimer()
							s.fill(v, wl, hint)
							b.StopTimer()
							runtime.ReadMemStats(&ms)
							mallocs += ms.Mallocs - m0
							s.close(v)
							v = nil
							b.StartTimer()
						}
						b.ReportMetric(float64(b.N*wl.Blocks)/b.Elapsed().Seconds(), "block-ops/s")
						b.ReportMetric(float64(live)/float64(wl.Pairs), "B/pair")
						if parts.Total() > 0 { // Flash's parts, from Indexer.Memory
							per := func(n int) float64 { return float64(n) / float64(wl.Pairs) }
							b.ReportMetric(per(parts.Tables+parts.Entries), "B/pair-shared")
							b.ReportMetric(per(parts.Nodes), "B/pair-nodes")
							b.ReportMetric(per(parts.IDs+parts.Content), "B/pair-ids")
						}
						b.ReportMetric(float64(mallocs)/float64(b.N*len(wl.Events)), "allocs/event")
					})
				}
			}
		}
	}
}

// BenchmarkStorePair fills Flash and the nested map by turns, each fill
// timed on its own after a collection and the two fills of a round back
// to back, the first of them alternating: a round's two fills see the
// same minute of a shared machine, which moves one binary's time by a
// third over minutes. It reports each one's block-ops/s over all rounds,
// their ratio (Flash ÷ map, of the summed times) and the median of the
// rounds' ratios.
func BenchmarkStorePair(b *testing.B) {
	byTurns(b, stores[:2], func(b *testing.B, rate func(int) float64, ratio, median func(i, j int) float64) {
		b.ReportMetric(rate(0), "flash-block-ops/s")
		b.ReportMetric(rate(1), "map-block-ops/s")
		b.ReportMetric(ratio(0, 1), "ratio")
		b.ReportMetric(median(0, 1), "ratio-median")
	})
}

// BenchmarkStoreSketch fills Flash, the nested map and the lean sketch by
// turns, as BenchmarkStorePair does two of them (each round's first fill
// rotating): block-ops/s of each, Flash ÷ map, Flash ÷ sketch and sketch ÷
// map of the summed times, and the medians of the rounds' Flash ÷ map and
// Flash ÷ sketch.
func BenchmarkStoreSketch(b *testing.B) {
	byTurns(b, stores[:3], func(b *testing.B, rate func(int) float64, ratio, median func(i, j int) float64) {
		b.ReportMetric(rate(0), "flash-block-ops/s")
		b.ReportMetric(rate(1), "map-block-ops/s")
		b.ReportMetric(rate(2), "sketch-block-ops/s")
		b.ReportMetric(ratio(0, 1), "flash/map")
		b.ReportMetric(ratio(0, 2), "flash/sketch")
		b.ReportMetric(ratio(2, 1), "sketch/map")
		b.ReportMetric(median(0, 1), "flash/map-median")
		b.ReportMetric(median(0, 2), "flash/sketch-median")
	})
}

// byTurns runs the by-turns rounds of impls over the trace's workloads
// and hands report their rates (block-ops/s over all rounds, by impl), the
// ratio of i's rate to j's (of the summed times) and its median over the
// rounds.
func byTurns(b *testing.B, impls []store, report func(b *testing.B, rate func(int) float64, ratio, median func(i, j int) float64)) {
	for _, w := range widths {
		for _, ev := range []string{"full", "delta"} {
			for _, hinted := range []string{"no", "yes", "reserved"} {
				b.Run(fmt.Sprintf("w=%d/ev=%s/hint=%s", w, ev, hinted), func(b *testing.B) {
					wl := workload(b, w, ev == "delta")
					hint := map[string]int{"yes": wl.Capacity, "reserved": -wl.Capacity}[hinted]
					total := make([]time.Duration, len(impls))
					var rounds [][]time.Duration
					for b.Loop() {
						took := make([]time.Duration, len(impls))
						for k := range impls {
							s := (k + len(rounds)) % len(impls) // the first rotates
							v := impls[s].make(wl, hint)
							runtime.GC()
							t0 := time.Now()
							impls[s].fill(v, wl, hint)
							took[s] = time.Since(t0)
							impls[s].close(v)
						}
						for s := range took {
							total[s] += took[s]
						}
						rounds = append(rounds, took)
					}
					rate := func(s int) float64 { return float64(b.N*wl.Blocks) / total[s].Seconds() }
					ratio := func(i, j int) float64 { return total[j].Seconds() / total[i].Seconds() }
					median := func(i, j int) float64 {
						r := make([]float64, len(rounds))
						for k, t := range rounds {
							r[k] = t[j].Seconds() / t[i].Seconds()
						}
						slices.Sort(r)
						return r[len(r)/2]
					}
					report(b, rate, ratio, median)
				})
			}
		}
	}
}

// BenchmarkFind queries every request of the trace against the index of
// all of them: block-ops/s (query blocks per second).
func BenchmarkFind(b *testing.B) {
	for _, w := range widths {
		wl := workload(b, w, false)
		ix := stores[0].build(wl, 0).(*flash.Indexer)
		n := stores[1].build(wl, 0).(Naive)
		for _, impl := range []struct {
			name string
			find func(flash.Query, *flash.Scores)
		}{{"flash", ix.FindMatches}, {"naive", n.Find}} {
			b.Run(fmt.Sprintf("w=%d/impl=%s", w, impl.name), func(b *testing.B) {
				var sc flash.Scores
				b.ReportAllocs()
				for b.Loop() {
					for _, q := range wl.Queries {
						impl.find(q, &sc)
					}
				}
				b.ReportMetric(float64(b.N*wl.Queried)/b.Elapsed().Seconds(), "block-ops/s")
			})
		}
		ix.Close()
	}
}

// Flash and the nested map answer every query of the trace alike, whether
// the index was built from full or from delta events, from empty or with
// capacity hints (made ahead or not): the benchmarks compare two implementations of one thing.
func TestStoreFind_Agree(t *testing.T) {
	for _, delta := range []bool{false, true} {
		if delta && testing.Short() {
			continue
		}
		wl := workload(t, 16, delta)
		for _, hint := range []int{0, wl.Capacity, -wl.Capacity} {
			ix := stores[0].build(wl, hint).(*flash.Indexer)
			n := stores[1].build(wl, hint).(Naive)
			sk := stores[2].build(wl, hint).(*Sketch)
			var a, b, c flash.Scores
			for qi, q := range wl.Queries {
				ix.FindMatches(q, &a)
				n.Find(q, &b)
				sk.Find(q, &c)
				want := depths(b)
				if got := depths(a); !maps.Equal(got, want) {
					t.Fatalf("delta=%v hint=%d query %d: flash %v, map %v", delta, hint, qi, got, want)
				}
				if got := depths(c); !maps.Equal(got, want) {
					t.Fatalf("delta=%v hint=%d query %d: sketch %v, map %v", delta, hint, qi, got, want)
				}
			}
			if st := ix.Stats(); st.BlocksStored != uint64(wl.Pairs) {
				t.Fatalf("delta=%v: %d blocks stored, want %d", delta, st.BlocksStored, wl.Pairs)
			}
			ix.Close()
		}
	}
}

// The sketch past 64 workers (sets in rows of a bit array) answers as the
// nested map does.
func TestSketch_Wide(t *testing.T) {
	wl := workload(t, 96, false)
	for _, hint := range []int{0, wl.Capacity} {
		n := stores[1].build(wl, hint).(Naive)
		sk := stores[2].build(wl, hint).(*Sketch)
		var b, c flash.Scores
		for qi, q := range wl.Queries {
			n.Find(q, &b)
			sk.Find(q, &c)
			if got, want := depths(c), depths(b); !maps.Equal(got, want) {
				t.Fatalf("hint=%d query %d: sketch %v, map %v", hint, qi, got, want)
			}
		}
	}
}

func depths(s flash.Scores) map[uint64]int {
	m := map[uint64]int{}
	for _, x := range s.Matches {
		m[x.Worker.ID] = x.Depth
	}
	return m
}

func abs(n int) int { return max(n, -n) }
