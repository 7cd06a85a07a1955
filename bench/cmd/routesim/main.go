// Command routesim measures what a router's index learns from: the
// engines' events, late by a delay, its own routing decisions as
// predictions, both, or nothing (round-robin). It routes the conversation
// trace, and a variant with bursts of requests that share a new prefix,
// over mock engines (package sim) and prints each setting's prefix-cache
// hit rate (query blocks found cached where they ran) and the spread of
// requests (the busiest worker's over the mean), and draws them.
//
// With -cpu-blocks, it also gives each engine a CPU cache that its GPU's
// evicted blocks are offloaded to, and compares routing on the GPU's depth
// alone with routing on both tiers' (a CPU block worth -cpu-weight of a
// GPU block): each tier's hit rate, and the prefill blocks saved.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flashindexer/flashindexer/bench/plots"
	"github.com/flashindexer/flashindexer/bench/sim"
	"github.com/flashindexer/flashindexer/bench/trace"
)

func main() {
	workers := flag.String("workers", "16,64", "worker counts, comma-separated")
	delays := flag.String("delays", "0,50ms,200ms", "event delays, comma-separated")
	ttls := flag.String("ttls", "", "also sweep the prediction TTL (predictions only), comma-separated")
	ttl := flag.Duration("ttl", 0, "prediction TTL (0: flash.DefaultPredictionTTL)")
	every := flag.Int64("burst-every", 10_000, "bursty variant: a burst every this many ms of the trace")
	size := flag.Int("burst-size", 8, "bursty variant: requests per burst")
	prefix := flag.Int("burst-prefix", 24, "bursty variant: shared prefix, in trace blocks")
	cache := flag.Int("cache-blocks", 16384, "cache blocks per mock engine")
	out := flag.String("out", "bench/out", "directory for the plot (empty: none)")
	cpu := flag.Int("cpu-blocks", 0, "also compare GPU-only with tier-aware routing, each engine with a CPU cache of this many blocks (0: skip)")
	tierGPU := flag.Int("tier-cache-blocks", 0, "GPU cache blocks per engine in that comparison (0: -cache-blocks)")
	cpuWeight := flag.Float64("cpu-weight", 0, "a CPU block's worth against a GPU block's in tier-aware routing (0: flash.DefaultTierWeight(1))")
	flag.Parse()

	reqs, err := trace.Load("")
	if err != nil {
		log.Fatal(err)
	}
	h, err := trace.NewHasher(512)
	if err != nil {
		log.Fatal(err)
	}
	traces := []struct {
		name string
		reqs []trace.Request
	}{{"conversation", reqs}, {"bursty", trace.Bursts(reqs, *every, *size, *prefix)}}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "trace\tworkers\tdelay\trouting\thit rate\tspread\t")
	var bars []plots.Bar
	for _, tr := range traces {
		for _, w := range ints(*workers) {
			for _, route := range []sim.Route{sim.RouteEvents, sim.RouteEventsPredict, sim.RoutePredict, sim.RouteRoundRobin} {
				ds := durations(*delays)
				if route == sim.RoutePredict || route == sim.RouteRoundRobin {
					ds = ds[:1] // no events to delay
				}
				for _, d := range ds {
					wl := sim.Record(tr.reqs, h, sim.Config{Workers: w, CacheBlocks: *cache, Route: route, EventDelay: d, PredictTTL: *ttl})
					delay := d.String()
					if route == sim.RoutePredict || route == sim.RouteRoundRobin {
						delay = "-"
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.1f%%\t%.2f\t\n", tr.name, w, delay, route, 100*wl.HitRate(), wl.Spread())
					bars = append(bars, plots.Bar{Group: fmt.Sprintf("%s, %d workers", tr.name, w), Name: route.String() + ", " + delay, Value: 100 * wl.HitRate()})
				}
			}
		}
	}
	tw.Flush()
	if *cpu > 0 {
		gpuBlocks := *tierGPU
		if gpuBlocks == 0 {
			gpuBlocks = *cache
		}
		fmt.Println()
		tw = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "trace\tworkers\tGPU blocks\tCPU blocks\trouting on\tGPU hit rate\tCPU hit rate\tprefill blocks saved\tof all\tvs GPU depth\t")
		for _, tr := range traces {
			for _, w := range ints(*workers) {
				cfg := sim.Config{Workers: w, CacheBlocks: gpuBlocks, CPUBlocks: *cpu, CPUWeight: *cpuWeight}
				gpuOnly := sim.Record(tr.reqs, h, cfg)
				cfg.TierAware = true
				aware := sim.Record(tr.reqs, h, cfg)
				for _, r := range []struct {
					name string
					wl   *sim.Workload
				}{{"GPU depth", gpuOnly}, {"tiers", aware}} {
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%.1f%%\t%.1f%%\t%d\t%.1f%%\t%.2fx\t\n", tr.name, w, gpuBlocks, *cpu, r.name,
						100*r.wl.HitRate(), 100*r.wl.CPUHitRate(), r.wl.SavedBlocks(), 100*float64(r.wl.SavedBlocks())/float64(max(1, r.wl.QueryBlocks)),
						float64(r.wl.SavedBlocks())/float64(max(1, gpuOnly.SavedBlocks())))
				}
			}
		}
		tw.Flush()
	}
	if *ttls != "" {
		fmt.Println()
		tw = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "workers\tTTL\tpredictions only\tevents, no delay\t")
		for _, w := range ints(*workers) {
			base := sim.Record(reqs, h, sim.Config{Workers: w, CacheBlocks: *cache})
			for _, t := range durations(*ttls) {
				wl := sim.Record(reqs, h, sim.Config{Workers: w, CacheBlocks: *cache, Route: sim.RoutePredict, PredictTTL: t})
				fmt.Fprintf(tw, "%d\t%s\t%.1f%%\t%.1f%%\t\n", w, t, 100*wl.HitRate(), 100*base.HitRate())
			}
		}
		tw.Flush()
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			log.Fatal(err)
		}
		files, err := plots.Bars(*out, "routing", "prefix-cache hit rate by what the router's index learns from (%)", bars)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("\nplot:", strings.Join(files, ", "))
	}
}

func ints(s string) (out []int) {
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			log.Fatalf("bad number %q", f)
		}
		out = append(out, n)
	}
	return out
}

func durations(s string) (out []time.Duration) {
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "0" {
			out = append(out, 0)
			continue
		}
		d, err := time.ParseDuration(f)
		if err != nil {
			log.Fatalf("bad duration %q", f)
		}
		out = append(out, d)
	}
	return out
}
