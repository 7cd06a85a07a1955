package storefind

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/bench/trace"
	"github.com/flashindexer/flashindexer/flash"
)

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

// newFlash is the index the benchmarks store into: synchronous (the caller
// is the writer), one bit per worker; when hint > 0, capacity hints and
// every worker declared ahead (AddWorker), as a router declares the
// engines it knows with their capacity.
func newFlash(wl *Workload, hint int) *flash.Indexer {
	opts := []flash.Option{flash.WithWriters(0), flash.WithBlockSize(trace.TraceBlockTokens), flash.WithMaxWorkers(wl.Workers)}
	if hint > 0 {
		opts = append(opts, flash.WithWorkerCapacity(hint))
	}
	ix := flash.New(opts...)
	if hint > 0 {
		for w := range wl.Workers {
			if err := ix.AddWorker(flash.Worker{ID: uint64(w)}); err != nil {
				panic(err)
			}
		}
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
	{"naive", func(wl *Workload, hint int) any { return NewNaive(wl, hint) }, func(v any, wl *Workload, hint int) {
		n := v.(Naive)
		for i := range wl.Events {
			n.Store(wl, i, hint)
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

// BenchmarkStore builds the trace's index from empty, or with every worker's
// map presized for the most blocks a worker holds (hint=yes): block-ops/s
// (blocks in events per second), live heap per (block, worker) pair after a
// collection (and for Flash, by part: Indexer.Memory), and allocations per
// event (those of filling an empty index: making it is outside the timer
// and the count).
func BenchmarkStore(b *testing.B) {
	for _, w := range []int{16, 96, 256} {
		for _, ev := range []string{"full", "delta"} {
			for _, hinted := range []string{"no", "yes"} {
				for _, s := range stores {
					b.Run(fmt.Sprintf("w=%d/ev=%s/hint=%s/impl=%s", w, ev, hinted, s.name), func(b *testing.B) {
						wl := workload(b, w, ev == "delta")
						hint := 0
						if hinted == "yes" {
							hint = wl.Capacity
						}
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
	for _, w := range []int{16, 96, 256} {
		for _, ev := range []string{"full", "delta"} {
			for _, hinted := range []string{"no", "yes"} {
				b.Run(fmt.Sprintf("w=%d/ev=%s/hint=%s", w, ev, hinted), func(b *testing.B) {
					wl := workload(b, w, ev == "delta")
					hint := 0
					if hinted == "yes" {
						hint = wl.Capacity
					}
					var total [2]time.Duration
					var ratios []float64
					round := 0
					for b.Loop() {
						var took [2]time.Duration
						for k := range 2 {
							s := (k + round) % 2 // flash first on even rounds
							v := stores[s].make(wl, hint)
							runtime.GC()
							t0 := time.Now()
							stores[s].fill(v, wl, hint)
							took[s] = time.Since(t0)
							stores[s].close(v)
						}
						total[0] += took[0]
						total[1] += took[1]
						ratios = append(ratios, took[1].Seconds()/took[0].Seconds())
						round++
					}
					rate := func(d time.Duration) float64 { return float64(b.N*wl.Blocks) / d.Seconds() }
					slices.Sort(ratios)
					b.ReportMetric(rate(total[0]), "flash-block-ops/s")
					b.ReportMetric(rate(total[1]), "map-block-ops/s")
					b.ReportMetric(total[1].Seconds()/total[0].Seconds(), "ratio")
					b.ReportMetric(ratios[len(ratios)/2], "ratio-median")
				})
			}
		}
	}
}

// BenchmarkFind queries every request of the trace against the index of
// all of them: block-ops/s (query blocks per second).
func BenchmarkFind(b *testing.B) {
	for _, w := range []int{16, 96, 256} {
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
// capacity hints: the benchmarks compare two implementations of one thing.
func TestStoreFind_Agree(t *testing.T) {
	for _, delta := range []bool{false, true} {
		if delta && testing.Short() {
			continue
		}
		wl := workload(t, 16, delta)
		for _, hint := range []int{0, wl.Capacity} {
			ix := stores[0].build(wl, hint).(*flash.Indexer)
			n := stores[1].build(wl, hint).(Naive)
			var a, b flash.Scores
			for qi, q := range wl.Queries {
				ix.FindMatches(q, &a)
				n.Find(q, &b)
				got, want := depths(a), depths(b)
				if len(got) != len(want) {
					t.Fatalf("delta=%v hint=%d query %d: flash %v, map %v", delta, hint, qi, got, want)
				}
				for w, d := range want {
					if got[w] != d {
						t.Fatalf("delta=%v hint=%d query %d: flash %v, map %v", delta, hint, qi, got, want)
					}
				}
			}
			if st := ix.Stats(); st.BlocksStored != uint64(wl.Pairs) {
				t.Fatalf("delta=%v: %d blocks stored, want %d", delta, st.BlocksStored, wl.Pairs)
			}
			ix.Close()
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
