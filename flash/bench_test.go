package flash_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
	"github.com/flashindexer/flashindexer/flash/model"
)

// BenchmarkFindMatches: depth × workers × shape, for flash (query with and
// without sequence hashes) and the reference model.
func BenchmarkFindMatches(b *testing.B) {
	for _, c := range flashtest.FindCases() {
		p := c.Chain()
		q := c.Query(p)
		var ix *flash.Indexer
		setup := func() {
			if ix == nil {
				ix = flash.New(flash.WithWriters(0), flash.WithMaxWorkers(c.Workers))
				c.Build(ix, p)
			}
		}
		b.Run("impl=flash/seqs=given/"+c.Name(), func(b *testing.B) {
			setup()
			flashtest.BenchFind(b, ix, flash.Query{Locals: q, Seqs: q.Seq()}, (*flash.Scores).Probes)
		})
		b.Run("impl=flash/seqs=lazy/"+c.Name(), func(b *testing.B) {
			setup()
			flashtest.BenchFind(b, ix, flash.Query{Locals: q}, (*flash.Scores).Probes)
		})
		b.Run("impl=model/seqs=given/"+c.Name(), func(b *testing.B) {
			if c.Depth*c.Workers > 256*128 {
				b.Skip("the model walks every worker at every position: O(W×D)")
			}
			m := model.New(flash.Config{MaxWorkers: c.Workers})
			c.Build(m, p)
			flashtest.BenchFind(b, m, flash.Query{Locals: q, Seqs: q.Seq()}, func(s *flash.Scores) int { return c.Depth * c.Workers })
		})
		if ix != nil {
			ix.Close()
		}
	}
}

// BenchmarkApply: stored and removed blocks per second, drain-inclusive
// (Flush before the clock stops), synchronous and with 1 and 2 writers.
func BenchmarkApply(b *testing.B) {
	for _, w := range []int{0, 1, 2} {
		b.Run(fmt.Sprintf("impl=flash/writers=%d", w), func(b *testing.B) {
			ix := flash.New(flash.WithWriters(w))
			defer ix.Close()
			flashtest.BenchApply(b, ix)
		})
	}
	b.Run("impl=model/writers=0", func(b *testing.B) { flashtest.BenchApply(b, model.New(flash.DefaultConfig())) })
}

// BenchmarkChurn: full caches in steady state. 16 workers each keep their
// last 32 prompts (an 8-block prefix they share, then 32 blocks of their
// own); storing a new prompt evicts the oldest one, leaf first. A worker's
// prompts come round again after 1,024, long after rebuilds dropped their
// keys' tombstones, so the shard tables churn as a serving fleet's do.
// allocs/op is per event (a store or an eviction), after two rounds.
func BenchmarkChurn(b *testing.B) {
	const workers, ring, keep, own, shared = 16, 1024, 32, 32, 8
	prefix := flashtest.Seqs(0, shared)
	prompt := func(k, w int) flashtest.Prompt {
		return flashtest.Concat(prefix, flashtest.Seqs(uint64(1+k*workers+w), own))
	}
	var warm, round []flash.Event
	for k := 0; k < ring; k++ {
		for w := 0; w < workers; w++ {
			wk := flash.Worker{ID: uint64(w)}
			store := prompt(k, w).StoreEvent(wk, 0, shared+own, 0)
			old := prompt((k-keep+ring)%ring, w)
			hs := make([]flash.ExternalHash, 0, own)
			for j := shared + own - 1; j >= shared; j-- {
				hs = append(hs, old.Hash(j, 0))
			}
			round = append(round, store, flash.RemovedEvent(wk, hs...))
			if k >= ring-keep {
				warm = append(warm, store) // the prompts held when a round starts
			}
		}
	}
	ix := flash.New(flash.WithWriters(0))
	defer ix.Close()
	apply := func(ev flash.Event) {
		if err := ix.Apply(ev); err != nil {
			b.Fatal(err)
		}
	}
	for _, ev := range warm {
		apply(ev)
	}
	for range 2 {
		for _, ev := range round {
			apply(ev)
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs := ms.Mallocs
	i := 0
	for b.Loop() {
		apply(round[i])
		if i++; i == len(round) {
			i = 0
		}
	}
	runtime.ReadMemStats(&ms)
	// Unrounded: testing's allocs/op shows a rare allocation as 0.
	b.ReportMetric(float64(ms.Mallocs-mallocs)/float64(b.N), "allocs/event")
	if st := ix.Stats(); st.RemovesUnknown != 0 {
		b.Fatalf("%d evicted blocks were not held", st.RemovesUnknown)
	}
}

// BenchmarkJumpSize: the jump distance on the grid's middle row (128
// workers), full matches and staggered drop-outs, queries with sequence
// hashes.
func BenchmarkJumpSize(b *testing.B) {
	for _, d := range []int{256, 1024, 4096} {
		for _, shape := range []string{"all", "staggered"} {
			c := flashtest.FindCase{Depth: d, Workers: 128, Shape: shape}
			p := c.Chain()
			q := c.Query(p)
			for _, j := range []int{16, 32, 64, 128} {
				b.Run(fmt.Sprintf("depth=%d/shape=%s/jump=%d", d, shape, j), func(b *testing.B) {
					ix := flash.New(flash.WithWriters(0), flash.WithMaxWorkers(128), flash.WithJumpSize(j))
					defer ix.Close()
					c.Build(ix, p)
					flashtest.BenchFind(b, ix, flash.Query{Locals: q, Seqs: q.Seq()}, (*flash.Scores).Probes)
				})
			}
		}
	}
}

// BenchmarkFlooding: 20,000 one-block prompts per position whose local
// hashes are random, or crafted to be equal in their low 32 bits (which
// would collide in an unkeyed table); queries of those prompts. The keyed
// slot hash keeps both alike.
func BenchmarkFlooding(b *testing.B) {
	for _, keys := range []string{"random", "crafted"} {
		b.Run("keys="+keys, func(b *testing.B) {
			ix := flash.New(flash.WithWriters(0), flash.WithMaxWorkers(64))
			defer ix.Close()
			const n = 20000
			r := rand.New(rand.NewPCG(1, 1))
			queries := make([]flash.Query, n)
			for i := 0; i < n; i++ {
				var l flash.LocalHash
				if keys == "random" {
					l = flash.LocalHash(r.Uint64())
				} else {
					l = flash.LocalHash(uint64(i+1) << 32)
				}
				p := flashtest.Prompt{l, flashtest.L(uint64(i))}
				_ = ix.Apply(p.StoreEvent(flash.Worker{ID: uint64(i % 16)}, 0, 2, 0))
				queries[i] = flash.Query{Locals: p, Seqs: p.Seq()}
			}
			var sc flash.Scores
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				ix.FindMatches(queries[i%n], &sc)
				i++
			}
		})
	}
}
