package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/flashindexer/flashindexer/flash"
)

// A small run end to end: the table, the JSON report and the plots.
func TestRun_Small(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "r.json")
	var out bytes.Buffer
	start := "5e5"
	if raceEnabled {
		start = "5e4"
	}
	args := []string{"--requests", "400", "--backends", "flash,naive,radix", "--block-size", "128",
		"--sweep-start", start, "--sweep-step", "8", "--min-time", "0", "--out", dir, "--json", jsonPath, "--quiet"}
	if err := run(args, &out, os.Stderr); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"flash", "naive", "radix", "threshold block-ops/s", "plots:"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
	var rep Report
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 3 || rep.Rows[0].Threshold <= 0 || len(rep.Rows[0].Points) == 0 {
		t.Fatalf("report %+v", rep.Rows)
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
		f, err := factory("flash", 16, c.writers, c.feeders, 512, c.laneTables)
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
