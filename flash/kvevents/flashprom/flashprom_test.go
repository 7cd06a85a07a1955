package flashprom

import (
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
	"github.com/flashindexer/flashindexer/flash/kvevents"
	"github.com/flashindexer/flashindexer/flash/model"
)

// value returns the value of the metric name with exactly labels, and
// whether it was there.
func value(t *testing.T, fams []*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue(), true
			case m.Gauge != nil:
				return m.GetGauge().GetValue(), true
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

func TestCollector_ExportsTheIndexStats(t *testing.T) {
	ix := flash.New(flash.WithWriters(2))
	defer ix.Close()
	sub := kvevents.New(ix, kvevents.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer sub.Close()
	if err := sub.Subscribe(kvevents.Endpoint{Addr: "tcp://127.0.0.1:1"}); err != nil { // nothing listens there
		t.Fatal(err)
	}
	c := New(ix, WithSubscriber(sub), WithConstLabels(prometheus.Labels{"index": "test"}))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)

	p := flashtest.Seqs(1, 10)
	w1, w2 := flash.Worker{ID: 1}, flash.Worker{ID: 2, DPRank: 3}
	for _, ev := range []flash.Event{
		p.StoreEvent(w1, 0, 10, 0),
		p.StoreEvent(w2, 0, 4, 0),
		p.StoreEvent(w2, 6, 8, 0), // unknown parent: rejected
		flash.RemovedEvent(w1, p.Hash(9, 0), 12345),
		flash.ClearedEvent(flash.Worker{ID: 9}),
	} {
		if err := ix.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	ix.Flush()
	var sc flash.Scores
	for range flash.LatencySampleEvery { // the index times one of them
		ix.FindMatches(flash.Query{Locals: p}, &sc)
	}
	if sc.Depth(w1) != 9 || sc.Depth(w2) != 4 {
		t.Fatalf("query through the collector: %+v", sc.Matches)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	lb := func(kv ...string) map[string]string {
		m := map[string]string{"index": "test"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, want := range []struct {
		name   string
		labels map[string]string
		v      float64
	}{
		{"flash_events_total", lb("kind", "stored", "outcome", "applied"), 2},
		{"flash_events_total", lb("kind", "stored", "outcome", "rejected"), 1},
		{"flash_events_total", lb("kind", "removed", "outcome", "applied"), 1},
		{"flash_events_total", lb("kind", "cleared", "outcome", "applied"), 1},
		{"flash_rejected_total", lb("reason", "unknown_parent"), 1},
		{"flash_rejected_total", lb("reason", "hash_conflict"), 0},
		{"flash_blocks_total", lb("op", "stored"), 14},
		{"flash_blocks_total", lb("op", "removed"), 1},
		{"flash_blocks_total", lb("op", "remove_unknown"), 1},
		{"flash_workers_removed_total", lb(), 0},
		{"flash_queries_total", lb(), 64},
		{"flash_query_blocks_total", lb(), 640},
		{"flash_query_hits_total", lb(), 64},
		{"flash_query_matched_blocks_total", lb(), 64 * 9},
		{"flash_predictions_total", lb("outcome", "applied"), 0},
		{"flash_queue_depth", lb("writer", "0"), 0},
		{"flash_queue_depth", lb("writer", "1"), 0},
		{"flash_worker_blocks", lb("worker", "1", "dp_rank", "0"), 9},
		{"flash_worker_blocks", lb("worker", "2", "dp_rank", "3"), 4},
		{"flash_workers", lb(), 2},
		{"flash_query_duration_seconds", lb(), 1},
		{"flash_kvevents_connections_total", lb("event", "connect"), 0},
		{"flash_kvevents_dropped_total", lb("reason", "malformed"), 0},
		{"flash_kvevents_stream_total", lb("kind", "resync"), 0},
		{"flash_kvevents_replays_total", lb("result", "ok"), 0},
		{"flash_kvevents_replayed_batches_total", lb(), 0},
		{"flash_kvevents_endpoint_up", lb("endpoint", "tcp://127.0.0.1:1"), 0},
	} {
		got, ok := value(t, fams, want.name, want.labels)
		if !ok || got != want.v {
			t.Errorf("%s%v = %v (present %v), want %v", want.name, want.labels, got, ok, want.v)
		}
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// An index other than a *flash.Indexer has the queries made through the
// collector timed into its histogram, every one.
func TestCollector_TimesOtherIndexes(t *testing.T) {
	m := model.New(flash.DefaultConfig())
	c := New(m)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	var sc flash.Scores
	for range 3 {
		c.FindMatches(flash.Query{Locals: flashtest.Seqs(1, 4)}, &sc)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := value(t, fams, "flash_query_duration_seconds", map[string]string{}); !ok || n != 3 {
		t.Fatalf("histogram count %v (%v), want 3", n, ok)
	}
	if n, _ := value(t, fams, "flash_queries_total", map[string]string{}); n != 3 {
		t.Fatalf("queries %v, want 3", n)
	}
}

// A query through the collector allocates nothing.
func TestCollector_FindMatchesNoAllocs(t *testing.T) {
	ix := flash.New(flash.WithWriters(0))
	p := flashtest.Seqs(1, 64)
	if err := ix.Apply(p.StoreEvent(flash.Worker{ID: 1}, 0, 64, 0)); err != nil {
		t.Fatal(err)
	}
	c := New(ix)
	var sc flash.Scores
	q := flash.Query{Locals: p, Seqs: p.Seq()}
	c.FindMatches(q, &sc)
	if n := testing.AllocsPerRun(500, func() { c.FindMatches(q, &sc) }); n != 0 {
		t.Fatalf("%v allocations per query", n)
	}
}

// Routed requests are counted by where their blocks are: in each tier of
// the index (the fastest a block is in), or left to prefill; an index of
// one tier has its GPU and none.
func TestCollector_RoutedBlocksByTier(t *testing.T) {
	ix := flash.New(flash.WithWriters(0), flash.WithTiers(flash.TierSpec{Name: "GPU"}, flash.TierSpec{Name: "CPU"}))
	defer ix.Close()
	c := New(ix)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	c.ObserveRoute(flash.Match{Depth: 5, TierDepth: [flash.MaxTiers]int32{2, 5}}, 8) // 2 GPU, 3 CPU, 3 to prefill
	c.ObserveRoute(flash.Match{Depth: 4, TierDepth: [flash.MaxTiers]int32{0, 4}}, 4) // 4 CPU
	c.ObserveRoute(flash.Match{}, 6)                                                 // no match: 6 to prefill
	if n := testing.AllocsPerRun(100, func() { c.ObserveRoute(flash.Match{Depth: 1, TierDepth: [flash.MaxTiers]int32{1, 1}}, 1) }); n != 0 {
		t.Fatalf("%v allocations per route", n)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for tier, want := range map[string]float64{"GPU": 2 + 101, "CPU": 7, "none": 9} {
		if got, ok := value(t, fams, "flash_routed_blocks_total", map[string]string{"tier": tier}); !ok || got != want {
			t.Errorf("routed blocks in %s: %v (%v), want %v", tier, got, ok, want)
		}
	}
	one := New(model.New(flash.DefaultConfig()))
	one.ObserveRoute(flash.Match{Depth: 3, TierDepth: [flash.MaxTiers]int32{3}}, 5)
	reg = prometheus.NewPedanticRegistry()
	reg.MustRegister(one)
	if fams, err = reg.Gather(); err != nil {
		t.Fatal(err)
	}
	for tier, want := range map[string]float64{"GPU": 3, "none": 2} {
		if got, ok := value(t, fams, "flash_routed_blocks_total", map[string]string{"tier": tier}); !ok || got != want {
			t.Errorf("one tier: routed blocks in %s: %v (%v), want %v", tier, got, ok, want)
		}
	}
}
