package flash_test

import (
	"fmt"
	"testing"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
	"github.com/flashindexer/flashindexer/flash/model"
)

type findCase struct {
	depth, workers int
	shape          string
}

// depthOf is worker i's depth for a shape: all hold everything, staggered
// drop-outs spread evenly over the query, or all diverge at block 2.
func (c findCase) depthOf(i int) int {
	switch c.shape {
	case "staggered":
		return max(1, (i+1)*c.depth/c.workers)
	case "early":
		return 2
	}
	return c.depth
}

// build stores the case on idx: every worker holds a prefix of one chain
// (shared entries), cut at its depth.
func (c findCase) build(idx flash.Index, p flashtest.Prompt) {
	for i := 0; i < c.workers; i++ {
		_ = idx.Apply(p.StoreEvent(flash.Worker{ID: uint64(i)}, 0, c.depthOf(i), 0))
	}
	idx.Flush()
}

func (c findCase) query(p flashtest.Prompt) flashtest.Prompt {
	q := append(flashtest.Prompt{}, p[:c.depth]...)
	if c.shape == "early" {
		q[2] = flashtest.L(424242)
	}
	return q
}

func findCases() []findCase {
	var cs []findCase
	for _, d := range []int{16, 256, 1024, 4096} {
		for _, w := range []int{16, 128, 1024} {
			for _, s := range []string{"all", "staggered", "early"} {
				cs = append(cs, findCase{d, w, s})
			}
		}
	}
	return cs
}

func benchFind(b *testing.B, idx flash.Index, q flash.Query, probes func(*flash.Scores) int) {
	var sc flash.Scores
	idx.FindMatches(q, &sc)
	b.ReportAllocs()
	b.ResetTimer()
	total := 0
	for b.Loop() {
		idx.FindMatches(q, &sc)
		total += probes(&sc)
	}
	b.ReportMetric(float64(b.N)*float64(len(q.Locals))/b.Elapsed().Seconds(), "block-ops/s")
	b.ReportMetric(float64(total)/float64(b.N), "probes/op")
}

// BenchmarkFindMatches: depth × workers × shape, for flash (query with and
// without sequence hashes) and the reference model.
func BenchmarkFindMatches(b *testing.B) {
	p := flashtest.Seqs(1, 4096)
	for _, c := range findCases() {
		name := fmt.Sprintf("depth=%d/workers=%d/shape=%s", c.depth, c.workers, c.shape)
		q := c.query(p)
		var ix *flash.Indexer
		setup := func() {
			if ix == nil {
				ix = flash.New(flash.WithWriters(0), flash.WithMaxWorkers(c.workers))
				c.build(ix, p)
			}
		}
		b.Run("impl=flash/seqs=given/"+name, func(b *testing.B) {
			setup()
			benchFind(b, ix, flash.Query{Locals: q, Seqs: q.Seq()}, (*flash.Scores).Probes)
		})
		b.Run("impl=flash/seqs=lazy/"+name, func(b *testing.B) {
			setup()
			benchFind(b, ix, flash.Query{Locals: q}, (*flash.Scores).Probes)
		})
		b.Run("impl=model/seqs=given/"+name, func(b *testing.B) {
			if c.depth*c.workers > 256*128 {
				b.Skip("the model walks every worker at every position: O(W×D)")
			}
			m := model.New(flash.Config{MaxWorkers: c.workers})
			c.build(m, p)
			benchFind(b, m, flash.Query{Locals: q, Seqs: q.Seq()}, func(s *flash.Scores) int { return c.depth * c.workers })
		})
		if ix != nil {
			ix.Close()
		}
	}
}

// BenchmarkApply: stored and removed blocks per second, drain-inclusive
// (Flush before the clock stops), synchronous and with 1 and 2 writers.
func BenchmarkApply(b *testing.B) {
	const workers, prompts, length = 16, 64, 64
	var ps []flashtest.Prompt
	for i := 0; i < prompts; i++ {
		// Prompts share a 16-block system prefix, then diverge.
		ps = append(ps, flashtest.Concat(flashtest.Seqs(0, 16), flashtest.Seqs(uint64(i+1), length-16)))
	}
	type evs struct{ store, remove flash.Event }
	var events []evs
	for i, p := range ps {
		w := flash.Worker{ID: uint64(i % workers)}
		hs := make([]flash.ExternalHash, length-16)
		for j := range hs {
			hs[j] = p.Hash(16+j, 0)
		}
		events = append(events, evs{p.StoreEvent(w, 0, length, 0), flash.RemovedEvent(w, hs...)})
	}
	run := func(b *testing.B, idx flash.Index) {
		b.ReportAllocs()
		blocks := 0
		for b.Loop() {
			for _, e := range events {
				_ = idx.Apply(e.store)
			}
			for _, e := range events {
				_ = idx.Apply(e.remove)
			}
			idx.Flush()
			blocks += prompts * (length + length - 16)
		}
		b.ReportMetric(float64(blocks)/b.Elapsed().Seconds(), "block-ops/s")
	}
	for _, w := range []int{0, 1, 2} {
		b.Run(fmt.Sprintf("impl=flash/writers=%d", w), func(b *testing.B) {
			ix := flash.New(flash.WithWriters(w))
			defer ix.Close()
			run(b, ix)
		})
	}
	b.Run("impl=model/writers=0", func(b *testing.B) { run(b, model.New(flash.DefaultConfig())) })
}

// BenchmarkJumpSize: the jump distance on the grid's middle row (128
// workers), full matches and staggered drop-outs, queries with sequence
// hashes.
func BenchmarkJumpSize(b *testing.B) {
	p := flashtest.Seqs(1, 4096)
	for _, d := range []int{256, 1024, 4096} {
		for _, shape := range []string{"all", "staggered"} {
			c := findCase{d, 128, shape}
			q := c.query(p)
			for _, j := range []int{16, 32, 64, 128} {
				b.Run(fmt.Sprintf("depth=%d/shape=%s/jump=%d", d, shape, j), func(b *testing.B) {
					ix := flash.New(flash.WithWriters(0), flash.WithMaxWorkers(128), flash.WithJumpSize(j))
					defer ix.Close()
					c.build(ix, p)
					benchFind(b, ix, flash.Query{Locals: q, Seqs: q.Seq()}, (*flash.Scores).Probes)
				})
			}
		}
	}
}
