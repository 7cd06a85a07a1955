// Command widths measures what the index costs as the fleet widens: the
// Mooncake conversation trace stored from empty into Flash and into a bare
// nested map (worker → sequence hash), request i on worker i mod W, for
// each W of --workers; then every request queried against both. It prints,
// for each width, the live heap per (block, worker) pair, the store rate
// (block-ops/s, rounds by turns, medians), and the query latency (p50 and
// p99 of FindMatches, one timed call per request), and draws each against
// the number of workers (PNG and SVG) in --out.
//
//	go run ./bench/cmd/widths --workers 16,128,256,1024,4096 --out docs/img
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flashindexer/flashindexer/bench/plots"
	"github.com/flashindexer/flashindexer/bench/storefind"
	"github.com/flashindexer/flashindexer/bench/trace"
	"github.com/flashindexer/flashindexer/flash"
)

// row is one width's figures.
type row struct {
	workers, pairs       int
	flashMem, mapMem     float64 // live heap per (block, worker), bytes
	flashStore, mapStore float64 // block-ops/s, median of the rounds
	flashP50, flashP99   time.Duration
	mapP50, mapP99       time.Duration
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fail(err)
	}
}

// run measures every width of args' --workers, prints the table to out and
// draws the plots.
func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("widths", flag.ContinueOnError)
	workers := fs.String("workers", "16,128,256,1024,4096", "fleet widths, comma-separated")
	rounds := fs.Int("rounds", 5, "fills of each index per width, by turns")
	hints := fs.Bool("hints", false, "declare every worker with its capacity (the most blocks a worker holds)")
	dir := fs.String("out", "bench/out/widths", "directory for the plots")
	noPlots := fs.Bool("no-plots", false, "print the table only")
	tracePath := fs.String("trace", "", "trace file (default: the embedded conversation trace)")
	requests := fs.Int("requests", 0, "use the trace's first n requests (0: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var ws []int
	for _, f := range strings.Split(*workers, ",") {
		w, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || w < 1 {
			return fmt.Errorf("--workers: bad width %q", f)
		}
		ws = append(ws, w)
	}
	reqs, err := trace.Load(*tracePath)
	if err != nil {
		return err
	}
	if *requests > 0 {
		reqs = reqs[:min(*requests, len(reqs))]
	}
	var rows []row
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workers\tpairs\tflash B/pair\tmap B/pair\tflash store/s\tmap store/s\tstore ÷ map\tflash p50\tflash p99\tmap p50\tmap p99\t")
	for _, w := range ws {
		wl, err := storefind.Build(reqs, w, false)
		if err != nil {
			return err
		}
		r, err := measure(wl, *rounds, *hints)
		if err != nil {
			return err
		}
		rows = append(rows, r)
		fmt.Fprintf(tw, "%d\t%d\t%.1f\t%.1f\t%.2fM\t%.2fM\t%.2f×\t%v\t%v\t%v\t%v\t\n", r.workers, r.pairs, r.flashMem, r.mapMem,
			r.flashStore/1e6, r.mapStore/1e6, r.flashStore/r.mapStore, r.flashP50, r.flashP99, r.mapP50, r.mapP99)
	}
	tw.Flush()
	if *noPlots {
		return nil
	}
	files, err := draw(*dir, ws, rows)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "plots:", strings.Join(files, " "))
	return nil
}

// draw plots the rows against the workers in dir.
func draw(dir string, ws []int, rows []row) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	col := func(f func(row) float64) []float64 {
		v := make([]float64, len(rows))
		for i, r := range rows {
			v[i] = f(r)
		}
		return v
	}
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	var files []string
	for _, p := range []struct {
		name, title, ylabel string
		lines               []plots.Line
		logY                bool
	}{
		{"widths_memory", "Live heap per (block, worker), from empty", "bytes", []plots.Line{
			{Name: "flash", Y: col(func(r row) float64 { return r.flashMem })},
			{Name: "nested map", Y: col(func(r row) float64 { return r.mapMem })},
		}, false},
		{"widths_store", "Store rate from empty, one thread", "block-ops/s (millions)", []plots.Line{
			{Name: "flash", Y: col(func(r row) float64 { return r.flashStore / 1e6 })},
			{Name: "nested map", Y: col(func(r row) float64 { return r.mapStore / 1e6 })},
		}, false},
		{"widths_query", "FindMatches latency", "µs", []plots.Line{
			{Name: "flash p50", Y: col(func(r row) float64 { return us(r.flashP50) })},
			{Name: "flash p99", Y: col(func(r row) float64 { return us(r.flashP99) })},
			{Name: "nested map p50", Y: col(func(r row) float64 { return us(r.mapP50) })},
			{Name: "nested map p99", Y: col(func(r row) float64 { return us(r.mapP99) })},
		}, true},
	} {
		f, err := plots.Widths(dir, p.name, p.title, p.ylabel, ws, p.lines, p.logY)
		if err != nil {
			return nil, err
		}
		files = append(files, f...)
	}
	return files, nil
}

// buildFlash makes the index for wl and fills it, its fill timed.
func buildFlash(wl *storefind.Workload, hint int) (*flash.Indexer, time.Duration, error) {
	ix, err := storefind.NewFlash(wl, hint, false)
	if err != nil {
		return nil, 0, err
	}
	runtime.GC()
	t0 := time.Now()
	for i := range wl.Events {
		if err := ix.Apply(wl.Events[i]); err != nil {
			return nil, 0, err
		}
	}
	return ix, time.Since(t0), nil
}

func fillMap(n storefind.Naive, wl *storefind.Workload, hint int) {
	for i := range wl.Events {
		n.Store(wl, i, hint)
	}
}

// measure fills both indexes rounds times by turns (the first of a round
// alternating, each fill after a collection), measures one build's live
// heap, and times every query once against each.
func measure(wl *storefind.Workload, rounds int, hinted bool) (row, error) {
	hint := 0
	if hinted {
		hint = wl.Capacity
	}
	r := row{workers: wl.Workers, pairs: wl.Pairs}
	var ft, mt []float64
	for k := range max(rounds, 1) {
		for j := range 2 {
			if (j+k)%2 == 0 {
				ix, took, err := buildFlash(wl, hint)
				if err != nil {
					return r, err
				}
				ft = append(ft, float64(wl.Blocks)/took.Seconds())
				ix.Close()
			} else {
				n := storefind.NewNaive(wl, hint)
				runtime.GC()
				t0 := time.Now()
				fillMap(n, wl, hint)
				mt = append(mt, float64(wl.Blocks)/time.Since(t0).Seconds())
			}
		}
	}
	r.flashStore, r.mapStore = median(ft), median(mt)

	before := liveHeap()
	ix, _, err := buildFlash(wl, hint)
	if err != nil {
		return r, err
	}
	r.flashMem = float64(liveHeap()-before) / float64(wl.Pairs)
	r.flashP50, r.flashP99 = latencies(wl, ix.FindMatches)
	ix.Close()
	ix = nil

	before = liveHeap()
	n := storefind.NewNaive(wl, hint)
	fillMap(n, wl, hint)
	r.mapMem = float64(liveHeap()-before) / float64(wl.Pairs)
	r.mapP50, r.mapP99 = latencies(wl, n.Find)
	runtime.KeepAlive(n)
	return r, nil
}

// latencies times one call of find per query (after a pass that warms
// the caches) and returns the median and the 99th percentile.
func latencies(wl *storefind.Workload, find func(flash.Query, *flash.Scores)) (p50, p99 time.Duration) {
	var sc flash.Scores
	for _, q := range wl.Queries {
		find(q, &sc)
	}
	lat := make([]time.Duration, len(wl.Queries))
	for i, q := range wl.Queries {
		t0 := time.Now()
		find(q, &sc)
		lat[i] = time.Since(t0)
	}
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100]
}

func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "widths:", err)
	os.Exit(1)
}
