package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/flashindexer/flashindexer/bench/replay"
	"github.com/flashindexer/flashindexer/flash"
)

// A small run end to end: the table, the JSON report and the plots, and
// what the report computes from its points. How far each sweep gets depends
// on the machine; that the report agrees with itself does not.
func TestRun_Small(t *testing.T) {
	dir := t.TempDir()
	rep, out := runReport(t, dir, "--requests", "300", "--backends", "flash,naive,radix", "--block-size", "128",
		"--sweep-start", "5e4", "--sweep-step", "8", "--refine", "1", "--min-time", "0")
	for _, want := range []string{"flash", "naive", "radix", "threshold block-ops/s", "plots:"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if len(rep.Rows) != 3 || len(rep.Workloads) != 1 || rep.Workloads[0].Requests != 300 || rep.Workloads[0].StoredBlocks == 0 {
		t.Fatalf("report %+v, workloads %+v", rep.Rows, rep.Workloads)
	}
	for _, r := range rep.Rows {
		checkRow(t, r)
	}
	for _, f := range []string{"throughput_w16.png", "throughput_w16.svg", "events_w16.png", "latency_w16.svg"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Fatalf("plot %s: %v", f, err)
		}
	}
	if plotErr != nil {
		t.Fatal(plotErr)
	}
}

// A load no machine sustains (10^12 block-ops/s: a block-op in a
// picosecond): no threshold, no latency run, and the report and plots still
// come out.
func TestRun_NothingSustained(t *testing.T) {
	dir := t.TempDir()
	rep, _ := runReport(t, dir, "--requests", "100", "--backends", "flash,naive", "--block-size", "512",
		"--sweep-start", "1e12", "--sweep-max", "1e12", "--min-time", "0")
	if len(rep.Rows) != 2 {
		t.Fatalf("report %+v", rep.Rows)
	}
	for _, r := range rep.Rows {
		checkRow(t, r)
		if r.Threshold != 0 || len(r.Points) != 1 || r.LatencyLoad != 0 || r.VsFlash != 0 {
			t.Fatalf("%s: %+v", r.Backend, r)
		}
	}
	if plotErr != nil {
		t.Fatal(plotErr)
	}
}

// runReport runs flashbench with args, plots into dir and a JSON report,
// and returns the report and the table.
func runReport(t *testing.T, dir string, args ...string) (*Report, string) {
	t.Helper()
	jsonPath := filepath.Join(dir, "r.json")
	var out bytes.Buffer
	args = append(args, "--out", dir, "--json", jsonPath, "--quiet")
	if err := run(args, &out, os.Stderr); err != nil {
		t.Fatal(err)
	}
	var rep Report
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return &rep, out.String()
}

// checkRow checks what a row computes from its points: points in order of
// offered load, the threshold the best sustained achieved load (0 when none
// is), a latency run at half the threshold exactly when there is one, and
// the memory figure.
func checkRow(t *testing.T, r *Row) {
	t.Helper()
	if len(r.Points) == 0 || r.BytesPerBlock <= 0 {
		t.Fatalf("%s: %d points, %v B per (block, worker)", r.Backend, len(r.Points), r.BytesPerBlock)
	}
	best := 0.0
	for i, p := range r.Points {
		if i > 0 && p.Offered <= r.Points[i-1].Offered {
			t.Fatalf("%s: points out of order: %+v", r.Backend, r.Points)
		}
		if p.Achieved <= 0 {
			t.Fatalf("%s: point %+v", r.Backend, p)
		}
		if p.Achieved >= replay.KeepRatio*p.Offered {
			best = max(best, p.Achieved)
		}
	}
	if r.Threshold != best {
		t.Fatalf("%s: threshold %v, best sustained %v: %+v", r.Backend, r.Threshold, best, r.Points)
	}
	if r.LatencyLoad != r.Threshold/2 || (r.Threshold > 0) != (r.P999us > 0 && r.P50us <= r.P99us && r.P99us <= r.P999us) {
		t.Fatalf("%s: latency at %v for threshold %v: p50 %v p99 %v p999 %v", r.Backend, r.LatencyLoad, r.Threshold, r.P50us, r.P99us, r.P999us)
	}
}

// --capacity-hints gives flash each engine's capacity (--cache-blocks) as
// its capacity hint and declares every engine before the replay: each
// worker's private state is made for it ahead, and the run's header says so.
func TestRun_CapacityHints(t *testing.T) {
	o, err := parse([]string{"--capacity-hints", "--cache-blocks", "4096"}, &bytes.Buffer{})
	if err != nil || !o.hints || o.cacheBlocks != 4096 {
		t.Fatalf("--capacity-hints: %+v, %v", o, err)
	}
	nodes := func(hint int) int {
		f, err := factory("flash", 16, 0, 1, 512, false, hint)
		if err != nil {
			t.Fatal(err)
		}
		ix := f().(*flash.Indexer)
		defer ix.Close()
		want := 0 // workers declared before any event
		if hint > 0 {
			want = 16
		}
		if ix.Workers() != want {
			t.Fatalf("hint %d: %d workers declared before any event, want %d", hint, ix.Workers(), want)
		}
		if err := ix.Apply(flash.StoredEvent(flash.Worker{ID: 1}, flash.Block{Hash: 7, Local: 9})); err != nil {
			t.Fatal(err)
		}
		return ix.Memory().Nodes
	}
	if with, without := nodes(4096), nodes(0); with < 16*without {
		t.Fatalf("one block stored: %d bytes of nodes with a hint of 4096 blocks, %d without", with, without)
	}
	rep, out := runReport(t, t.TempDir(), "--requests", "100", "--backends", "flash", "--capacity-hints", "--cache-blocks", "2048",
		"--sweep-start", "5e4", "--sweep-step", "8", "--refine", "1", "--min-time", "0", "--no-plots")
	if rep.CapacityHint != 2048 || !strings.Contains(out, "a capacity hint of 2048 blocks per worker") {
		t.Fatalf("capacity hint %d in the report; output:\n%s", rep.CapacityHint, out)
	}
	for _, r := range rep.Rows {
		checkRow(t, r)
	}
}

func TestParse_Rejects(t *testing.T) {
	for _, args := range [][]string{{"--sweep-step", "1"}, {"extra"}, {"--nope"}} {
		if _, err := parse(args, &bytes.Buffer{}); err == nil {
			t.Fatalf("%v accepted", args)
		}
	}
}

// Without --writers, flash applies events on the feeders below 4 CPUs and
// on its default writers from 4; an explicit count is kept. Without
// --feeders there is one per CPU.
func TestParse_Writers(t *testing.T) {
	if got := autoWriters(2); got != 0 {
		t.Fatalf("autoWriters(2) = %d, want 0", got)
	}
	if got, want := autoWriters(16), flash.DefaultWriters(); got != want {
		t.Fatalf("autoWriters(16) = %d, want flash.DefaultWriters() = %d", got, want)
	}
	o, err := parse([]string{"--writers", "3"}, &bytes.Buffer{})
	if err != nil || o.writers != 3 {
		t.Fatalf("--writers 3: %v, %v", o, err)
	}
	o, err = parse(nil, &bytes.Buffer{})
	if err != nil || o.writers != autoWriters(runtime.GOMAXPROCS(0)) || o.feeders != runtime.GOMAXPROCS(0) {
		t.Fatalf("default writers and feeders: %+v, %v", o, err)
	}
	o, err = parse([]string{"--feeders", "3"}, &bytes.Buffer{})
	if err != nil || o.feeders != 3 {
		t.Fatalf("--feeders 3: %+v, %v", o, err)
	}
}

// A synchronous flash gets a lane per feeder, so each feeder applies its
// workers' events without waiting for another; --lane-tables gives each lane
// its own table.
func TestFactory_FlashLanePerFeeder(t *testing.T) {
	for _, c := range []struct {
		writers, feeders, lanes int
		laneTables              bool
	}{{0, 3, 3, false}, {0, 3, 3, true}, {0, 1, 1, true}, {2, 3, 2, false}, {2, 3, 2, true}} {
		f, err := factory("flash", 16, c.writers, c.feeders, 512, c.laneTables, 0)
		if err != nil {
			t.Fatal(err)
		}
		ix := f().(*flash.Indexer)
		if ix.Lanes() != c.lanes {
			t.Errorf("writers %d, feeders %d: %d lanes, want %d", c.writers, c.feeders, ix.Lanes(), c.lanes)
		}
		if want := c.laneTables && c.lanes > 1; ix.LaneTables() != want {
			t.Errorf("writers %d, feeders %d, lane tables %v: LaneTables() = %v", c.writers, c.feeders, c.laneTables, ix.LaneTables())
		}
		ix.Close()
	}
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--writers", "0", "--feeders", "2"}, true},
		{[]string{"--writers", "0", "--feeders", "4"}, true},
		{[]string{"--writers", "0", "--feeders", "5"}, false},
		{[]string{"--writers", "8", "--feeders", "2"}, false},
		{[]string{"--writers", "0", "--feeders", "8", "--lane-tables", "on"}, true},
		{[]string{"--writers", "0", "--feeders", "2", "--lane-tables", "off"}, false},
	} {
		o, err := parse(c.args, &bytes.Buffer{})
		if err != nil || o.laneTables != c.want {
			t.Errorf("%v: lane tables %v (%v), want %v", c.args, o != nil && o.laneTables, err, c.want)
		}
	}
	if _, err := parse([]string{"--lane-tables", "yes"}, &bytes.Buffer{}); err == nil {
		t.Error("--lane-tables yes: no error")
	}
}

// The default run is the steady state (caches that fill and evict); --cold
// is the cold fill, whose caches hold the trace; --cache-blocks wins over
// both.
func TestParse_SteadyStateByDefault(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, steadyCacheBlocks},
		{[]string{"--cold"}, coldCacheBlocks},
		{[]string{"--cold", "--cache-blocks", "4096"}, 4096},
		{[]string{"--cache-blocks", "512"}, 512},
	} {
		o, err := parse(c.args, &bytes.Buffer{})
		if err != nil || o.cacheBlocks != c.want {
			t.Fatalf("%v: %d cache blocks (%v), want %d", c.args, o.cacheBlocks, err, c.want)
		}
	}
}

// Off a terminal, progress is a plain line every few seconds at most, so
// a run under CI or a pipe says what it does; --quiet says nothing.
func TestProgress_LinesOffTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := newProgress(w, false)
	p.every = 0
	p.printf("step %d", 1)
	p.printf("step %d", 2)
	q := newProgress(w, true)
	q.printf("quiet")
	p.done()
	w.Close()
	out, _ := io.ReadAll(r)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "] step 1") || !strings.HasSuffix(lines[1], "] step 2") || strings.Contains(string(out), "\r") {
		t.Fatalf("progress off a terminal: %q", out)
	}
}
