// Command flashbench replays the Mooncake trace against every index backend
// and reports how much load each sustains.
//
// With no arguments it runs a quick default on the embedded conversation
// trace (16 workers, 512-token blocks): it records the workload with mock
// engines and a KV-aware router, sweeps the offered load for every backend
// until achieved stops following offered, measures query latency at half of
// each backend's threshold, allocations, bytes per indexed (block, worker)
// and the GC's share of CPU, prints a table and writes plots (PNG and SVG)
// to bench/out.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flashindexer/flashindexer/affinity"
	"github.com/flashindexer/flashindexer/bench/baseline"
	"github.com/flashindexer/flashindexer/bench/plots"
	"github.com/flashindexer/flashindexer/bench/replay"
	"github.com/flashindexer/flashindexer/bench/sim"
	"github.com/flashindexer/flashindexer/bench/trace"
	"github.com/flashindexer/flashindexer/flash"
)

type options struct {
	tracePath    string
	blockSize    int
	workers      string
	dup, length  int
	requests     int
	cacheBlocks  int
	cold         bool // --cold: caches that hold the whole trace
	backends     string
	readers      int
	writers      int
	feeders      int
	laneTables   bool
	laneMode     string // --lane-tables: auto, on or off
	hints        bool   // --capacity-hints
	refine       int
	sweepStart   float64
	sweepStep    float64
	sweepMax     float64
	minTime      time.Duration
	out          string
	jsonOut      string
	noPlots      bool
	cpuProfile   string
	memProfile   string
	mutexProfile string
	quiet        bool
}

func parse(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("flashbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.tracePath, "trace", "", "trace file (JSON lines, Mooncake format; .gz accepted); default: the embedded conversation trace")
	fs.IntVar(&o.blockSize, "block-size", 512, "engine block size in tokens: 16, 64, 128 or 512")
	fs.StringVar(&o.workers, "workers", "16", "worker counts, comma-separated (e.g. 16,256)")
	fs.IntVar(&o.dup, "dup", 1, "duplicate the trace this many times (offset ids, same timestamps)")
	fs.IntVar(&o.length, "length", 1, "stretch every prompt by this factor")
	fs.IntVar(&o.requests, "requests", 0, "use only the first N requests (0: all)")
	fs.IntVar(&o.cacheBlocks, "cache-blocks", steadyCacheBlocks, "cache blocks per mock engine (default: the steady state, caches that fill and evict; with --cold, 16384)")
	fs.BoolVar(&o.cold, "cold", false, "the cold fill: caches of 16,384 blocks, which hold the whole trace, so no block is evicted (a router's first minutes, not its steady state)")
	fs.StringVar(&o.backends, "backends", "flash,naive,actor,inverted,radix,concurrent-radix", "backends to run")
	fs.IntVar(&o.readers, "readers", 1, "query goroutines")
	fs.IntVar(&o.writers, "writers", -1, "writer goroutines of flash and of the concurrent radix tree (0: flash applies on the feeders, synchronously, a lane per feeder; -1: 0 below 4 CPUs, else flash's default)")
	fs.StringVar(&o.laneMode, "lane-tables", "auto", "flash: a table per lane (flash.WithLaneTables; writers share no table, a query searches each lane's table): on, off, or auto (on with at most 4 lanes)")
	fs.BoolVar(&o.hints, "capacity-hints", false, "flash: tell the index each engine's capacity (--cache-blocks, flash.WithWorkerCapacity) with its state made ahead (flash.WithReservedCapacity), and declare every engine before the replay (flash.Indexer.AddWorker), as a router that registers its engines and knows their num_gpu_blocks does: each worker's private state is made for its cache before its first event")
	fs.IntVar(&o.feeders, "feeders", 0, "event goroutines, each applying its share of the workers' events in order (0: one per CPU)")
	fs.Float64Var(&o.sweepStart, "sweep-start", 250e3, "first offered load, block-ops/s")
	fs.Float64Var(&o.sweepStep, "sweep-step", 2, "factor between offered loads")
	fs.IntVar(&o.refine, "refine", 3, "bisections between the highest sustained load and the next (the threshold to within step^(1/2^refine))")
	fs.Float64Var(&o.sweepMax, "sweep-max", 2e9, "largest offered load, block-ops/s")
	fs.DurationVar(&o.minTime, "min-time", 300*time.Millisecond, "measure each offered load for at least this long (the workload repeats on fresh indexes, after a collection and one unmeasured replay)")
	fs.StringVar(&o.out, "out", filepath.Join("bench", "out"), "directory for plots")
	fs.StringVar(&o.jsonOut, "json", "", "also write the results as JSON to this file (- for stdout)")
	fs.BoolVar(&o.noPlots, "no-plots", false, "skip the plots")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile")
	fs.StringVar(&o.memProfile, "memprofile", "", "write a heap profile at the end")
	fs.StringVar(&o.mutexProfile, "mutexprofile", "", "write a mutex contention profile at the end")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress on stderr")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "cache-blocks" })
	if o.cold && !set {
		o.cacheBlocks = coldCacheBlocks
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if o.sweepStep <= 1 {
		return nil, fmt.Errorf("-sweep-step must be > 1")
	}
	if o.writers < 0 {
		o.writers = autoWriters(runtime.GOMAXPROCS(0))
	}
	if o.feeders <= 0 {
		o.feeders = runtime.GOMAXPROCS(0)
	}
	lanes := o.writers // flash's lanes: its writers, or a lane per feeder
	if lanes == 0 {
		lanes = o.feeders
	}
	switch o.laneMode {
	case "auto":
		o.laneTables = lanes <= autoLaneTablesMax
	case "on", "off":
		o.laneTables = o.laneMode == "on"
	default:
		return nil, fmt.Errorf("-lane-tables must be auto, on or off")
	}
	return o, nil
}

// steadyCacheBlocks: each mock engine caches 2,048 blocks, so that on the
// conversation trace every cache fills within the first minutes and each
// new prompt then evicts, as in a router's steady state; coldCacheBlocks
// hold the whole trace, so nothing is evicted (--cold).
const (
	steadyCacheBlocks = 2048
	coldCacheBlocks   = 16384
)

// autoLaneTablesMax: with lane tables a query runs a search per lane; on
// two CPUs two lanes with a table each raised flash's threshold by a quarter
// to a half, and four kept p99 latency under 9 µs; more are not measured.
const autoLaneTablesMax = 4

// autoWriters picks flash's writer goroutines for a machine of cpus CPUs.
// Below 4 CPUs none: the feeders apply events themselves, each in a lane of
// its own. A writer goroutine pays off when it has a core of its own; on two
// CPUs it shares them with the feeders, the reader and the garbage
// collector, and handing each event over costs more than applying it
// (measured in paired runs when the choice was made: the commit log).
func autoWriters(cpus int) int {
	if cpus < 4 {
		return 0
	}
	return flash.DefaultWriters()
}

// Row is one backend at one worker count.
type Row struct {
	Backend          string  `json:"backend"`
	Workers          int     `json:"workers"`
	Threshold        float64 `json:"threshold_block_ops_per_s"`
	ThresholdOps     float64 `json:"threshold_ops_per_s"`
	VsFlash          float64 `json:"flash_over_backend"`
	P50, P99, P999   float64 `json:"-"`
	P50us            float64 `json:"p50_us"`
	P99us            float64 `json:"p99_us"`
	P999us           float64 `json:"p999_us"`
	LatencyLoad      float64 `json:"latency_load_block_ops_per_s"`
	AllocsPerOp      float64 `json:"allocs_per_op"`
	BytesPerBlock    float64 `json:"bytes_per_block_worker"`
	GCShare          float64 `json:"gc_share"`
	Points           []Point `json:"sweep"`
	latencies        []time.Duration
	offered, achieve []float64
}

// Point is one load of a sweep.
type Point struct {
	Offered  float64 `json:"offered"`
	Achieved float64 `json:"achieved"`
}

// Report is the whole run.
type Report struct {
	Machine string `json:"machine"`
	Go      string `json:"go"`
	Writers int    `json:"writers"` // flash's writer goroutines (0: synchronous Apply)
	Feeders int    `json:"feeders"` // event goroutines of the replay
	// LaneTables: flash's lanes have a table each (flash.WithLaneTables).
	LaneTables bool `json:"lane_tables"`
	// CapacityHint: flash's capacity hint per worker (0: none).
	CapacityHint int `json:"capacity_hint,omitempty"`
	// CacheBlocks: each mock engine's cache; Cold: --cold.
	CacheBlocks int      `json:"cache_blocks"`
	Cold        bool     `json:"cold"`
	Trace       string   `json:"trace"`
	BlockSize   int      `json:"block_size"`
	Workloads   []WLInfo `json:"workloads"`
	Rows        []*Row   `json:"results"`
	Plots       []string `json:"plots"`
}

// WLInfo describes a recorded workload.
type WLInfo struct {
	Workers       int     `json:"workers"`
	Requests      int     `json:"requests"`
	Events        int     `json:"events"`
	StoredBlocks  int     `json:"stored_blocks"`
	RemovedBlocks int     `json:"removed_blocks"`
	QueryBlocks   int     `json:"query_blocks"`
	HitRate       float64 `json:"prefix_hit_rate"`
	SpanSeconds   float64 `json:"span_s"`
	// Flash's allocations per event in the steady state (every engine's
	// cache full, replay.Steady), and in its second half; SteadyEvents is
	// 0 when no steady state was measured.
	SteadyEvents         int     `json:"steady_events,omitempty"`
	SteadyAllocsPerEvent float64 `json:"steady_allocs_per_event"`
	LateAllocsPerEvent   float64 `json:"steady_late_allocs_per_event"`
}

// factory makes the backend's indexes; a synchronous flash (writers 0) gets a
// lane per feeder, with laneTables a table per lane, and with hint > 0 that
// capacity hint for every worker and every engine declared (AddWorker)
// before the replay, as a router declares the engines it registers.
func factory(name string, workers, writers, feeders, blockSize int, laneTables bool, hint int) (replay.Factory, error) {
	cfg := flash.DefaultConfig()
	cfg.MaxWorkers = workers
	cfg.BlockSize = blockSize
	switch name {
	case "flash":
		opts := []flash.Option{flash.WithConfig(cfg), flash.WithWriters(writers), flash.WithSyncLanes(feeders), flash.WithLaneTables(laneTables)}
		if hint == 0 {
			return func() flash.Index { return flash.New(opts...) }, nil
		}
		opts = append(opts, flash.WithWorkerCapacity(hint), flash.WithReservedCapacity())
		return func() flash.Index {
			ix := flash.New(opts...)
			for w := range workers { // the simulator's engines, 0 to workers-1
				if err := ix.AddWorker(flash.Worker{ID: uint64(w)}); err != nil {
					panic(err) // workers fit MaxWorkers by construction
				}
			}
			return ix
		}, nil
	case "naive":
		return func() flash.Index { return baseline.NewNaive(cfg) }, nil
	case "actor":
		return func() flash.Index { return baseline.NewActor(cfg) }, nil
	case "inverted":
		return func() flash.Index { return baseline.NewInverted(cfg) }, nil
	case "radix":
		return func() flash.Index { return baseline.NewRadix(cfg) }, nil
	case "concurrent-radix":
		return func() flash.Index { return baseline.NewConcurrentRadix(cfg, writers) }, nil
	}
	return nil, fmt.Errorf("unknown backend %q", name)
}

// progress reports what the run is doing on stderr: on a terminal a line
// that each step rewrites; elsewhere (CI, a pipe, a file) a line every
// progressEvery at most, so that a long run is never silent for long.
type progress struct {
	w     io.Writer
	on    bool // not --quiet
	tty   bool
	beg   time.Time
	last  time.Time // of the last line, off a terminal
	every time.Duration
}

// progressEvery: off a terminal, a line every 3 s at most.
const progressEvery = 3 * time.Second

func newProgress(w *os.File, quiet bool) *progress {
	p := &progress{w: w, on: !quiet, beg: time.Now(), every: progressEvery}
	if st, err := w.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
		p.tty = true
	}
	return p
}

func (p *progress) printf(format string, a ...any) {
	switch {
	case !p.on:
	case p.tty:
		fmt.Fprintf(p.w, "\r\033[K[%5.1fs] "+format, append([]any{time.Since(p.beg).Seconds()}, a...)...)
	case time.Since(p.last) >= p.every:
		p.last = time.Now()
		fmt.Fprintf(p.w, "[%5.1fs] "+format+"\n", append([]any{time.Since(p.beg).Seconds()}, a...)...)
	}
}

func (p *progress) done() {
	if p.on && p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// bytesPerBlock applies every event of wl to a fresh index without pacing
// and divides the heap the index retains (live heap with it, minus live
// heap once it is closed and dropped) by the (block, worker) pairs it holds.
func bytesPerBlock(wl *sim.Workload, f replay.Factory) float64 {
	idx := f()
	for _, op := range wl.Ops {
		if op.Event != nil {
			_ = idx.Apply(*op.Event)
		}
	}
	idx.Flush()
	held := 0
	for _, w := range wl.Workers {
		held += idx.BlockCount(w)
	}
	var with, without runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&with)
	_ = idx.Close()
	idx = nil
	runtime.GC()
	runtime.ReadMemStats(&without)
	if held == 0 {
		return 0
	}
	return float64(int64(with.HeapAlloc)-int64(without.HeapAlloc)) / float64(held)
}

func run(args []string, stdout io.Writer, stderr *os.File) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if o.mutexProfile != "" {
		runtime.SetMutexProfileFraction(5)
	}
	reqs, err := trace.Load(o.tracePath)
	if err != nil {
		return err
	}
	if o.requests > 0 && o.requests < len(reqs) {
		reqs = reqs[:o.requests]
	}
	reqs = trace.Scale(reqs, o.dup, o.length)
	h, err := trace.NewHasher(o.blockSize)
	if err != nil {
		return err
	}
	name := o.tracePath
	if name == "" {
		name = "embedded Mooncake conversation trace"
	}
	rep := &Report{Machine: affinity.Describe(), Go: runtime.Version(), Trace: name, BlockSize: o.blockSize, Writers: o.writers, Feeders: o.feeders, LaneTables: o.laneTables,
		CacheBlocks: o.cacheBlocks, Cold: o.cold}
	if o.hints {
		rep.CapacityHint = o.cacheBlocks
	}
	pr := newProgress(stderr, o.quiet)
	if !o.noPlots {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
	}
	for _, ws := range strings.Split(o.workers, ",") {
		workers, err := strconv.Atoi(strings.TrimSpace(ws))
		if err != nil || workers < 1 {
			return fmt.Errorf("bad worker count %q", ws)
		}
		pr.printf("recording %d requests on %d workers", len(reqs), workers)
		wl := sim.Record(reqs, h, sim.Config{Workers: workers, CacheBlocks: o.cacheBlocks, BlockSize: o.blockSize})
		rep.Workloads = append(rep.Workloads, WLInfo{Workers: workers, Requests: len(reqs), Events: wl.Events, StoredBlocks: wl.StoredBlocks,
			RemovedBlocks: wl.RemovedBlocks, QueryBlocks: wl.QueryBlocks, HitRate: float64(wl.HitBlocks) / float64(max(1, wl.QueryBlocks)), SpanSeconds: float64(wl.Span) / 1e9})
		var series []plots.Series
		var latNames []string
		var lats [][]time.Duration
		var flashTh float64
		rows := []*Row{}
		// The backends' sweeps take turns, a load each, so that every
		// backend meets the machine's moods alike and the ratios of one run
		// compare like with like.
		type sweep struct {
			name string
			f    replay.Factory
			sw   *replay.Sweeper
		}
		var sweeps []sweep
		for _, b := range strings.Split(o.backends, ",") {
			b = strings.TrimSpace(b)
			hint := 0
			if o.hints {
				hint = o.cacheBlocks
			}
			f, err := factory(b, workers, o.writers, o.feeders, o.blockSize, o.laneTables, hint)
			if err != nil {
				return err
			}
			sweeps = append(sweeps, sweep{b, f, replay.NewSweeper(o.sweepStart, o.sweepStep, o.sweepMax, o.refine)})
		}
		ropts := replay.Options{Readers: o.readers, Feeders: o.feeders}
		for busy := true; busy; {
			busy = false
			for _, s := range sweeps {
				load, ok := s.sw.Next()
				if !ok {
					continue
				}
				busy = true
				if r, settled := s.sw.Record(replay.Repeat(wl, s.f, load, o.minTime, ropts)); settled {
					pr.printf("%s, %d workers: offered %s → achieved %s block-ops/s", s.name, workers, plots.SI(r.Offered), plots.SI(r.Achieved))
				}
			}
		}
		for _, s := range sweeps {
			b, f := s.name, s.f
			row := &Row{Backend: b, Workers: workers}
			pts, th := s.sw.Points(), s.sw.Threshold()
			for _, p := range pts {
				row.Points = append(row.Points, Point{p.Offered, p.Achieved})
				row.offered = append(row.offered, p.Offered)
				row.achieve = append(row.achieve, p.Achieved)
			}
			row.Threshold = th
			row.ThresholdOps = th / float64(wl.BlockOps()) * float64(len(wl.Ops))
			if th > 0 {
				pr.printf("%s, %d workers: latency at half of the threshold", b, workers)
				idx := f()
				lo := ropts
				lo.RecordLatency, lo.MeasureRuntime = true, true
				r := replay.Run(wl, idx, th/2, lo)
				_ = idx.Close()
				row.LatencyLoad = th / 2
				row.P50, row.P99, row.P999 = float64(replay.Quantile(r.Latencies, 0.5)), float64(replay.Quantile(r.Latencies, 0.99)), float64(replay.Quantile(r.Latencies, 0.999))
				row.P50us, row.P99us, row.P999us = row.P50/1e3, row.P99/1e3, row.P999/1e3
				row.AllocsPerOp, row.GCShare = r.AllocsPerOp, r.GCShare
				row.latencies = r.Latencies
			}
			pr.printf("%s, %d workers: memory", b, workers)
			row.BytesPerBlock = bytesPerBlock(wl, f)
			if b == "flash" {
				flashTh = th
				pr.printf("%s, %d workers: steady state", b, workers)
				info := &rep.Workloads[len(rep.Workloads)-1]
				n, all, late := replay.Steady(wl, f)
				if n > 0 {
					info.SteadyEvents = n
					info.SteadyAllocsPerEvent = float64(all) / float64(n)
					info.LateAllocsPerEvent = float64(late) / float64(n-n/2)
				}
			}
			rows = append(rows, row)
			series = append(series, plots.Series{Name: b, Offered: row.offered, Achieved: row.achieve, Threshold: th})
			latNames = append(latNames, b)
			lats = append(lats, row.latencies)
		}
		for _, r := range rows {
			if flashTh > 0 && r.Threshold > 0 {
				r.VsFlash = flashTh / r.Threshold
			}
		}
		rep.Rows = append(rep.Rows, rows...)
		if !o.noPlots {
			pr.printf("plotting")
			for _, files := range [][]string{
				must(plots.Throughput(o.out, fmt.Sprintf("throughput_w%d", workers), fmt.Sprintf("Achieved vs offered, %d workers, %d-token blocks", workers, o.blockSize), series)),
				must(plots.EventDensity(o.out, fmt.Sprintf("events_w%d", workers), fmt.Sprintf("Cache events per worker (green: stores dominate, red: removes), %d workers", workers), wl, 240)),
				must(plots.LatencyCDF(o.out, fmt.Sprintf("latency_w%d", workers), fmt.Sprintf("FindMatches latency at half of each threshold, %d workers", workers), latNames, lats)),
			} {
				rep.Plots = append(rep.Plots, files...)
			}
		}
	}
	pr.done()
	printTable(stdout, rep)
	if o.jsonOut != "" {
		var w io.Writer = stdout
		if o.jsonOut != "-" {
			f, err := os.Create(o.jsonOut)
			if err != nil {
				return err
			}
			defer f.Close()
			w = f
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	}
	if o.memProfile != "" {
		if err := writeProfile("heap", o.memProfile); err != nil {
			return err
		}
	}
	if o.mutexProfile != "" {
		if err := writeProfile("mutex", o.mutexProfile); err != nil {
			return err
		}
	}
	return nil
}

var plotErr error

func must(files []string, err error) []string {
	if err != nil && plotErr == nil {
		plotErr = err
	}
	return files
}

func writeProfile(name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if name == "heap" {
		runtime.GC()
	}
	return pprof.Lookup(name).WriteTo(f, 0)
}

func printTable(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "flashbench: %s, %d-token blocks\n%s, %s\n", rep.Trace, rep.BlockSize, rep.Machine, rep.Go)
	if rep.Cold {
		fmt.Fprintf(w, "cold fill (--cold): engines of %d cache blocks, which hold the trace: few or no blocks evicted\n", rep.CacheBlocks)
	} else {
		fmt.Fprintf(w, "steady state: engines of %d cache blocks that fill and then evict for every new prompt (--cold for the cold fill)\n", rep.CacheBlocks)
	}
	tables := "one table"
	if rep.LaneTables {
		tables = "a table per lane"
	}
	if rep.CapacityHint > 0 {
		tables += fmt.Sprintf(", a capacity hint of %d blocks per worker", rep.CapacityHint)
	}
	if rep.Writers == 0 {
		fmt.Fprintf(w, "events from %d feeder goroutine(s); flash applies them on the feeders (synchronous Apply, a lane per feeder, %s); the concurrent radix tree has one writer\n\n", rep.Feeders, tables)
	} else {
		fmt.Fprintf(w, "events from %d feeder goroutine(s); flash (%s) and the concurrent radix tree apply them on %d writer goroutine(s)\n\n", rep.Feeders, tables, rep.Writers)
	}
	for _, wl := range rep.Workloads {
		fmt.Fprintf(w, "workload, %d workers: %d requests, %d events (%d stored, %d removed blocks), %d query blocks, prefix hit rate %.1f%%, %.0f s of trace\n",
			wl.Workers, wl.Requests, wl.Events, wl.StoredBlocks, wl.RemovedBlocks, wl.QueryBlocks, 100*wl.HitRate, wl.SpanSeconds)
		if wl.SteadyEvents > 0 {
			fmt.Fprintf(w, "  flash in the steady state (every engine's cache full, %d events applied in order): %.4f allocs/event, %.4f in its second half\n",
				wl.SteadyEvents, wl.SteadyAllocsPerEvent, wl.LateAllocsPerEvent)
		}
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "backend\tworkers\tthreshold block-ops/s\tops/s\tflash ÷ it\tp50 µs\tp99 µs\tp999 µs\tallocs/op\tB/(block,worker)\tGC CPU\t")
	for _, r := range rep.Rows {
		ratio := "—"
		if r.VsFlash > 0 {
			ratio = fmt.Sprintf("%.1f×", r.VsFlash)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.0f\t%.1f%%\t\n", r.Backend, r.Workers, plots.SI(r.Threshold), plots.SI(r.ThresholdOps), ratio,
			r.P50us, r.P99us, r.P999us, r.AllocsPerOp, r.BytesPerBlock, 100*r.GCShare)
	}
	tw.Flush()
	if len(rep.Plots) > 0 {
		fmt.Fprintf(w, "\nplots: %s\n", strings.Join(rep.Plots, ", "))
	}
	if plotErr != nil {
		fmt.Fprintf(w, "plotting failed: %v\n", plotErr)
	}
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if err != flag.ErrHelp {
			fmt.Fprintln(os.Stderr, "flashbench:", err)
			os.Exit(2)
		}
	}
}
