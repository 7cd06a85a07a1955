// Command fleet builds one index the size of a large fleet's caches and
// measures it: --workers workers, each holding --blocks blocks, stored as
// prompts of --prompt blocks whose first --shared blocks are one of
// --systems system prompts (shared by every worker that has it) and the
// rest the worker's own. It reports the build's time and rate, the live
// heap per (block, worker) pair with the index's parts (Indexer.Memory),
// and the latency of --queries queries of two kinds: a stored prompt
// (one worker holds it whole, a system prompt's workers its head) and a
// system prompt followed by blocks nobody holds.
//
//	go run ./bench/cmd/fleet --workers 1024 --blocks 65536
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/flashindexer/flashindexer/flash"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// local names block i of prompt p of worker w (w < 0: system prompt p),
// distinct for distinct arguments.
func local(w, p, i int) flash.LocalHash {
	return flash.LocalHash(uint64(w+1)<<40 | uint64(p)<<20 | uint64(i) | 1<<63)
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	workers := fs.Int("workers", 1024, "workers")
	blocks := fs.Int("blocks", 65536, "blocks each worker holds")
	prompt := fs.Int("prompt", 1024, "blocks a prompt")
	shared := fs.Int("shared", 32, "blocks of a prompt's system prompt")
	systems := fs.Int("systems", 8, "system prompts")
	queries := fs.Int("queries", 20000, "queries of each kind")
	cpuProfile := fs.String("cpuprofile", "", "write the build's CPU profile to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *workers < 1 || *prompt < 1 || *shared < 0 || *shared >= *prompt || *systems < 1 || *blocks < *prompt {
		return fmt.Errorf("bad sizes")
	}
	prompts := *blocks / *prompt
	pairs := *workers * prompts * *prompt
	ix := flash.New(flash.WithWriters(0), flash.WithMaxWorkers(*workers), flash.WithMaxBatch(*prompt))
	defer ix.Close()

	// The prompt of worker w, number p: system prompt (w+p) mod systems,
	// then its own blocks.
	fill := func(dst []flash.Block, w, p int) []flash.Block {
		dst = dst[:0]
		sys := (w + p) % *systems
		for i := range *prompt {
			l := local(w, p, i)
			if i < *shared {
				l = local(-1, sys, i)
			}
			dst = append(dst, flash.Block{Hash: flash.ExternalHash(l), Local: l})
		}
		return dst
	}
	before := liveHeap()
	var buf []flash.Block
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer f.Close()
	}
	t0 := time.Now()
	for p := range prompts {
		for w := range *workers {
			buf = fill(buf, w, p)
			if err := ix.Apply(flash.StoredEvent(flash.Worker{ID: uint64(w)}, buf...)); err != nil {
				return err
			}
		}
	}
	took := time.Since(t0)
	pprof.StopCPUProfile()
	heap := liveHeap() - before
	m := ix.Memory()
	per := func(n int) float64 { return float64(n) / float64(pairs) }
	fmt.Fprintf(out, "fleet: %d workers × %d blocks (%d prompts of %d, the first %d one of %d system prompts): %d (block, worker) pairs, %d shared entries\n",
		*workers, prompts**prompt, prompts, *prompt, *shared, *systems, pairs, m.Keys)
	fmt.Fprintf(out, "build: %.1f s, %.2fM block-ops/s, one thread\n", took.Seconds(), float64(pairs)/took.Seconds()/1e6)
	fmt.Fprintf(out, "memory: live heap %.2f GiB, %.1f B/pair (tables %.1f, entries %.1f, nodes %.1f, ids %.1f)\n",
		float64(heap)/(1<<30), per(int(heap)), per(m.Tables), per(m.Entries), per(m.Nodes), per(m.IDs+m.Content))

	r := rand.New(rand.NewPCG(1, 2))
	var sc flash.Scores
	for _, kind := range []string{"stored prompt", "system prompt, then unknown"} {
		lat := make([]time.Duration, *queries)
		var matched int
		for k := range lat {
			w, p := r.IntN(*workers), r.IntN(prompts)
			buf = fill(buf, w, p)
			if kind != "stored prompt" {
				for i := *shared; i < len(buf); i++ {
					buf[i].Local = local(-2, k, i) // nobody's
				}
			}
			q := flash.Query{Locals: localsOf(buf)}
			t := time.Now()
			ix.FindMatches(q, &sc)
			lat[k] = time.Since(t)
			matched += len(sc.Matches)
		}
		slices.Sort(lat)
		fmt.Fprintf(out, "query (%s, %d blocks, hashed lazily): p50 %v, p99 %v, p99.9 %v, %.0f workers matched on average\n",
			kind, *prompt, lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)*999/1000], float64(matched)/float64(len(lat)))
	}
	return nil
}

var locals []flash.LocalHash

func localsOf(bs []flash.Block) []flash.LocalHash {
	locals = locals[:0]
	for _, b := range bs {
		locals = append(locals, b.Local)
	}
	return locals
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
