package storefind

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/bench/trace"
	"github.com/flashindexer/flashindexer/flash"
)

// A layout measured before it was built: a fleet of more than 64 workers
// split into planes of at most 64, each plane an index of its own, so that
// every worker set is one word in its table's values (no arena slot) and a
// store touches its plane's table alone; a query searches every plane.
// Worker w goes to plane w mod planes. The index has planes of its own up
// to 128 workers (flash's maxPlanes); past that it keeps the wide form,
// and these benchmarks measure what planes would do there.

// planeCount is how many planes of at most 64 workers w workers take.
func planeCount(w int) int { return (w + 63) / 64 }

// newPlanes makes empty plane indexes for wl.
func newPlanes(wl *Workload) []*flash.Indexer {
	n := planeCount(wl.Workers)
	per := (wl.Workers + n - 1) / n
	ixs := make([]*flash.Indexer, n)
	for p := range ixs {
		ixs[p] = flash.New(flash.WithWriters(0), flash.WithBlockSize(trace.TraceBlockTokens), flash.WithMaxWorkers(per))
	}
	return ixs
}

// fillPlanes applies every event to its worker's plane.
func fillPlanes(ixs []*flash.Indexer, wl *Workload) {
	for i := range wl.Events {
		if err := ixs[int(wl.Events[i].Worker.ID)%len(ixs)].Apply(wl.Events[i]); err != nil {
			panic(err)
		}
	}
}

func closePlanes(ixs []*flash.Indexer) {
	for _, ix := range ixs {
		ix.Close()
	}
}

// The planes answer every query as one index does: the union of the
// planes' matches is the index's.
func TestPlanes_Agree(t *testing.T) {
	wl := workload(t, 96, false)
	one := stores[0].build(wl, 0).(*flash.Indexer)
	defer one.Close()
	ixs := newPlanes(wl)
	defer closePlanes(ixs)
	fillPlanes(ixs, wl)
	if len(ixs) != 2 {
		t.Fatalf("%d planes for 96 workers", len(ixs))
	}
	var a, b flash.Scores
	for qi, q := range wl.Queries {
		one.FindMatches(q, &a)
		want := depths(a)
		got := map[uint64]int{}
		for _, ix := range ixs {
			ix.FindMatches(q, &b)
			for w, d := range depths(b) {
				got[w] = d
			}
		}
		if len(got) != len(want) {
			t.Fatalf("query %d: planes %v, one index %v", qi, got, want)
		}
		for w, d := range want {
			if got[w] != d {
				t.Fatalf("query %d: planes %v, one index %v", qi, got, want)
			}
		}
	}
}

// BenchmarkStorePlanes fills one index, the planes and the nested map by
// turns (as BenchmarkStorePair), and reports each index's rate against the
// map's, the median of the rounds' speedups of the planes over one index,
// and both layouts' live heap per (block, worker).
func BenchmarkStorePlanes(b *testing.B) {
	for _, w := range []int{96, 256} {
		b.Run(fmt.Sprintf("w=%d", w), func(b *testing.B) {
			wl := workload(b, w, false)
			before := liveHeap()
			one := stores[0].build(wl, 0).(*flash.Indexer)
			oneBytes := liveHeap() - before
			one.Close()
			one = nil
			before = liveHeap()
			ixs := newPlanes(wl)
			fillPlanes(ixs, wl)
			planeBytes := liveHeap() - before
			closePlanes(ixs)
			ixs = nil

			var total [3]time.Duration // one, planes, map
			var speedups []float64
			round := 0
			for b.Loop() {
				var took [3]time.Duration
				for k := range 3 {
					s := (k + round) % 3
					runtime.GC()
					switch s {
					case 0:
						ix := newFlash(wl, 0)
						t0 := time.Now()
						stores[0].fill(ix, wl, 0)
						took[0] = time.Since(t0)
						ix.Close()
					case 1:
						ixs := newPlanes(wl)
						t0 := time.Now()
						fillPlanes(ixs, wl)
						took[1] = time.Since(t0)
						closePlanes(ixs)
					case 2:
						n := NewNaive(wl, 0)
						t0 := time.Now()
						stores[1].fill(n, wl, 0)
						took[2] = time.Since(t0)
					}
				}
				for k := range total {
					total[k] += took[k]
				}
				speedups = append(speedups, took[0].Seconds()/took[1].Seconds())
				round++
			}
			slices.Sort(speedups)
			b.ReportMetric(total[2].Seconds()/total[0].Seconds(), "one÷map")
			b.ReportMetric(total[2].Seconds()/total[1].Seconds(), "planes÷map")
			b.ReportMetric(speedups[len(speedups)/2], "planes-speedup")
			b.ReportMetric(float64(oneBytes)/float64(wl.Pairs), "B/pair-one")
			b.ReportMetric(float64(planeBytes)/float64(wl.Pairs), "B/pair-planes")
		})
	}
}

// BenchmarkFindPlanes queries every request against one index and against
// the planes (a search each): query blocks per second.
func BenchmarkFindPlanes(b *testing.B) {
	for _, w := range []int{96, 256} {
		wl := workload(b, w, false)
		one := stores[0].build(wl, 0).(*flash.Indexer)
		ixs := newPlanes(wl)
		fillPlanes(ixs, wl)
		for _, impl := range []struct {
			name string
			ixs  []*flash.Indexer
		}{{"one", []*flash.Indexer{one}}, {"planes", ixs}} {
			b.Run(fmt.Sprintf("w=%d/impl=%s", w, impl.name), func(b *testing.B) {
				var sc flash.Scores
				for b.Loop() {
					for _, q := range wl.Queries {
						for _, ix := range impl.ixs {
							ix.FindMatches(q, &sc)
						}
					}
				}
				b.ReportMetric(float64(b.N*wl.Queried)/b.Elapsed().Seconds(), "block-ops/s")
			})
		}
		one.Close()
		closePlanes(ixs)
	}
}
