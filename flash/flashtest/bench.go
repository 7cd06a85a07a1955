package flashtest

import (
	"fmt"
	"testing"

	"github.com/flashindexer/flashindexer/flash"
)

// FindCase is one cell of the FindMatches benchmark grid: workers hold a
// prefix of one chain (shared entries), cut by the shape: "all" (every
// worker holds the whole query), "staggered" (worker i drops out at depth
// (i+1)·D/W), "early" (the query diverges at block 2) or "few" (the last
// three workers hold the whole query, each other worker a short chain of
// its own).
type FindCase struct {
	Depth, Workers int
	Shape          string
}

// FindCases returns the grid: depth {16, 256, 1024, 4096} × workers
// {16, 128, 256, 1024, 4096} × shape {all, staggered, early, few}.
func FindCases() []FindCase {
	var cs []FindCase
	for _, d := range []int{16, 256, 1024, 4096} {
		for _, w := range []int{16, 128, 256, 1024, 4096} {
			for _, s := range []string{"all", "staggered", "early", "few"} {
				cs = append(cs, FindCase{d, w, s})
			}
		}
	}
	return cs
}

// Name is the case's sub-benchmark name.
func (c FindCase) Name() string {
	return fmt.Sprintf("depth=%d/workers=%d/shape=%s", c.Depth, c.Workers, c.Shape)
}

// DepthOf is worker i's depth.
func (c FindCase) DepthOf(i int) int {
	switch c.Shape {
	case "staggered":
		return max(1, (i+1)*c.Depth/c.Workers)
	case "early":
		return 2
	case "few":
		if i < c.Workers-3 {
			return 0 // a chain of its own (Build)
		}
	}
	return c.Depth
}

// Chain is the prompt every case is cut from.
func (c FindCase) Chain() Prompt { return Seqs(1, 4096) }

// Build stores the case on idx.
func (c FindCase) Build(idx flash.Index, p Prompt) {
	for i := 0; i < c.Workers; i++ {
		w := flash.Worker{ID: uint64(i)}
		if d := c.DepthOf(i); d > 0 {
			_ = idx.Apply(p.StoreEvent(w, 0, d, 0))
		} else {
			_ = idx.Apply(Seqs(uint64(1_000_000+i), 8).StoreEvent(w, 0, 8, 0))
		}
	}
	idx.Flush()
}

// Query returns the case's query, cut from p.
func (c FindCase) Query(p Prompt) Prompt {
	q := append(Prompt{}, p[:c.Depth]...)
	if c.Shape == "early" {
		q[2] = L(424242)
	}
	return q
}

// BenchFind runs FindMatches(q) in a loop, reporting block-ops/s and, when
// probes is not nil, probes/op.
func BenchFind(b *testing.B, idx flash.Index, q flash.Query, probes func(*flash.Scores) int) {
	var sc flash.Scores
	idx.FindMatches(q, &sc)
	b.ReportAllocs()
	b.ResetTimer()
	total := 0
	for b.Loop() {
		idx.FindMatches(q, &sc)
		if probes != nil {
			total += probes(&sc)
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(q.Locals))/b.Elapsed().Seconds(), "block-ops/s")
	if probes != nil {
		b.ReportMetric(float64(total)/float64(b.N), "probes/op")
	}
}

// ApplyWorkload is the Apply benchmark's event stream: 64 prompts of 64
// blocks (a 16-block shared system prefix, then their own) on 16 workers;
// a round stores every prompt, then removes its 48 own blocks again.
type ApplyWorkload struct {
	Stores, Removes []flash.Event
	BlockOps        int // stored plus removed blocks per round
}

// NewApplyWorkload builds the workload.
func NewApplyWorkload() *ApplyWorkload {
	const workers, prompts, length, shared = 16, 64, 64, 16
	aw := &ApplyWorkload{}
	for i := 0; i < prompts; i++ {
		p := Concat(Seqs(0, shared), Seqs(uint64(i+1), length-shared))
		w := flash.Worker{ID: uint64(i % workers)}
		hs := make([]flash.ExternalHash, length-shared)
		for j := range hs {
			hs[j] = p.Hash(shared+j, 0)
		}
		aw.Stores = append(aw.Stores, p.StoreEvent(w, 0, length, 0))
		aw.Removes = append(aw.Removes, flash.RemovedEvent(w, hs...))
		aw.BlockOps += length + length - shared
	}
	return aw
}

// BenchApply applies rounds of the workload, drain-inclusive (Flush before
// the clock stops), reporting block-ops/s.
func BenchApply(b *testing.B, idx flash.Index) {
	aw := NewApplyWorkload()
	b.ReportAllocs()
	ops := 0
	for b.Loop() {
		for _, e := range aw.Stores {
			_ = idx.Apply(e)
		}
		for _, e := range aw.Removes {
			_ = idx.Apply(e)
		}
		idx.Flush()
		ops += aw.BlockOps
	}
	b.ReportMetric(float64(ops)/b.Elapsed().Seconds(), "block-ops/s")
}
