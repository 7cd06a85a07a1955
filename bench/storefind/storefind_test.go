package storefind

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

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
// is the writer), one bit per worker, capacity hints when hint > 0.
func newFlash(wl *Workload, hint int) *flash.Indexer {
	opts := []flash.Option{flash.WithWriters(0), flash.WithBlockSize(trace.TraceBlockTokens), flash.WithMaxWorkers(wl.Workers)}
	if hint > 0 {
		opts = append(opts, flash.WithWorkerCapacity(hint))
	}
	return flash.New(opts...)
}

// store is one implementation's way to build the whole workload.
type store struct {
	name  string
	build func(wl *Workload, hint int) any // returns what holds the memory
	close func(any)
}

var stores = []store{
	{"flash", func(wl *Workload, hint int) any {
		ix := newFlash(wl, hint)
		for i := range wl.Events {
			if err := ix.Apply(wl.Events[i]); err != nil {
				panic(err)
			}
		}
		return ix
	}, func(v any) { v.(*flash.Indexer).Close() }},
	{"naive", func(wl *Workload, hint int) any {
		n := NewNaive()
		for i := range wl.Events {
			n.Store(wl, i, hint)
		}
		return n
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
// collection, and allocations per event.
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
						s.close(v)
						v = nil

						var ms runtime.MemStats
						var mallocs uint64
						for b.Loop() {
							b.StopTimer()
							runtime.ReadMemStats(&ms)
							m0 := ms.Mallocs
							b.StartTimer()
							v = s.build(wl, hint)
							b.StopTimer()
							runtime.ReadMemStats(&ms)
							mallocs += ms.Mallocs - m0
							s.close(v)
							v = nil
							b.StartTimer()
						}
						b.ReportMetric(float64(b.N*wl.Blocks)/b.Elapsed().Seconds(), "block-ops/s")
						b.ReportMetric(float64(live)/float64(wl.Pairs), "B/pair")
						b.ReportMetric(float64(mallocs)/float64(b.N*len(wl.Events)), "allocs/event")
					})
				}
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
