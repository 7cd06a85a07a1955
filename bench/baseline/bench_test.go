package baseline_test

import (
	"fmt"
	"testing"

	"github.com/flashindexer/flashindexer/bench/baseline"
	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
)

// maxCells bounds depth × workers per backend: building and querying the
// larger cells of the grid takes the O(W×D) generations minutes.
var maxCells = map[string]int{"naive": 256 * 128, "actor": 256 * 128, "inverted": 1024 * 1024, "radix": 1024 * 1024, "concurrent-radix": 1024 * 1024}

// BenchmarkFindMatches: the same grid and names as flash's, so benchstat
// compares them directly.
func BenchmarkFindMatches(b *testing.B) {
	for _, be := range backends() {
		for _, c := range flashtest.FindCases() {
			b.Run(fmt.Sprintf("impl=%s/seqs=given/%s", be.name, c.Name()), func(b *testing.B) {
				if c.Depth*c.Workers > maxCells[be.name] {
					b.Skipf("%d cells past this generation's budget", c.Depth*c.Workers)
				}
				cfg := flash.DefaultConfig()
				cfg.MaxWorkers = c.Workers
				idx := be.make(b, cfg)
				defer idx.Close()
				p := c.Chain()
				c.Build(idx, p)
				q := c.Query(p)
				flashtest.BenchFind(b, idx, flash.Query{Locals: q, Seqs: q.Seq()}, nil)
			})
		}
	}
}

// BenchmarkApply: the same workload and names as flash's.
func BenchmarkApply(b *testing.B) {
	for _, be := range backends() {
		writers := 0
		switch be.name {
		case "actor", "radix":
			writers = 1
		case "concurrent-radix":
			writers = 2
		}
		b.Run(fmt.Sprintf("impl=%s/writers=%d", be.name, writers), func(b *testing.B) {
			idx := be.make(b, flash.DefaultConfig())
			defer idx.Close()
			flashtest.BenchApply(b, idx)
		})
	}
	b.Run("impl=concurrent-radix/writers=1", func(b *testing.B) {
		idx := baseline.NewConcurrentRadix(flash.DefaultConfig(), 1)
		defer idx.Close()
		flashtest.BenchApply(b, idx)
	})
}
