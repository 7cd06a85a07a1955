// Package flashprom exports a flash index's statistics, and a kvevents
// Subscriber's, as Prometheus metrics.
//
//	ix := flash.New()
//	sub := kvevents.New(ix)
//	c := flashprom.New(ix, flashprom.WithSubscriber(sub))
//	prometheus.MustRegister(c)
//	...
//	c.FindMatches(q, &scores) // a query, timed into the latency histogram
//
// Counters are read from Stats at scrape time, so the index's hot paths pay
// nothing for them; only the latency histogram is observed per query.
package flashprom

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/kvevents"
)

// Collector is a prometheus.Collector for one index (and optionally one
// Subscriber). Safe for concurrent use.
type Collector struct {
	ix      flash.Index
	sub     *kvevents.Subscriber
	latency prometheus.Histogram

	events, rejected, blocks, queries, ids *prometheus.Desc
	queue, workerBlocks, workers           *prometheus.Desc
	subConn, subBatches, subEvents         *prometheus.Desc
	subDropped, subStream, subReplayed     *prometheus.Desc
	epUp, epSeq                            *prometheus.Desc
}

type settings struct {
	ns      string
	buckets []float64
	sub     *kvevents.Subscriber
	labels  prometheus.Labels
}

// Option configures a Collector.
type Option func(*settings)

// WithNamespace sets the metric name prefix (default "flash").
func WithNamespace(ns string) Option { return func(s *settings) { s.ns = ns } }

// WithSubscriber adds a Subscriber's counters (connections, batches,
// dropped input, gaps, restarts, replays, resyncs).
func WithSubscriber(sub *kvevents.Subscriber) Option { return func(s *settings) { s.sub = sub } }

// WithLatencyBuckets sets the query latency histogram's buckets, in
// seconds (default: 250 ns to about 1 ms, doubling).
func WithLatencyBuckets(b []float64) Option { return func(s *settings) { s.buckets = b } }

// WithConstLabels adds labels to every metric (for example the index's name).
func WithConstLabels(l prometheus.Labels) Option { return func(s *settings) { s.labels = l } }

// New returns a Collector for ix. Per-writer queue depths and per-worker
// block counts are exported when ix is a *flash.Indexer.
func New(ix flash.Index, opts ...Option) *Collector {
	s := settings{ns: "flash", buckets: prometheus.ExponentialBuckets(250e-9, 2, 13)}
	for _, o := range opts {
		o(&s)
	}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(s.ns, "", name), help, labels, s.labels)
	}
	return &Collector{
		ix:  ix,
		sub: s.sub,
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: s.ns, Name: "query_duration_seconds", ConstLabels: s.labels,
			Help:    "Time FindMatches took, for queries made through the collector.",
			Buckets: s.buckets,
		}),
		events:       d("events_total", "Events by kind and outcome (applied or rejected).", "kind", "outcome"),
		rejected:     d("rejected_total", "Rejected events (and RemoveWorker calls after Close) by reason.", "reason"),
		blocks:       d("blocks_total", "Blocks by what happened to them: stored (newly held), duplicate (already held), removed, remove_unknown (not held), worker_removed (workers dropped by RemoveWorker).", "op"),
		queries:      d("queries_total", "Queries answered, and the query blocks they looked at.", "unit"),
		ids:          d("event_id_anomalies_total", "Event ids that skipped ahead (gap) or went back (restart), when the index tracks them.", "kind"),
		queue:        d("queue_depth", "Events waiting in (or being applied from) each writer's queue.", "writer"),
		workerBlocks: d("worker_blocks", "Blocks each worker (DP rank) holds.", "worker", "dp_rank"),
		workers:      d("workers", "Workers (DP ranks) holding a slot."),
		subConn:      d("kvevents_connections_total", "Subscriber connection changes: connect, disconnect, dial_failure.", "event"),
		subBatches:   d("kvevents_batches_total", "Batches decoded and applied, replayed ones included."),
		subEvents:    d("kvevents_events_total", "Events the subscriber handed to the index."),
		subDropped:   d("kvevents_dropped_total", "Input the subscriber dropped, by reason: malformed (whole batches), bad_event (token count or block size), unknown_event, other_medium, apply_error.", "reason"),
		subStream:    d("kvevents_stream_total", "Stream anomalies: gap, restart, late_join, duplicate, resync (workers cleared after an unrecovered loss).", "kind"),
		subReplayed:  d("kvevents_replay_total", "Replay requests that recovered (ok) or did not (failed), and batches replayed.", "result"),
		epUp:         d("kvevents_endpoint_up", "1 while the endpoint's connection is up.", "endpoint"),
		epSeq:        d("kvevents_endpoint_next_seq", "The sequence number each endpoint is expected to send next (once it has sent one).", "endpoint"),
	}
}

// ObserveQuery records one query's duration.
func (c *Collector) ObserveQuery(d time.Duration) { c.latency.Observe(d.Seconds()) }

// FindMatches answers q from the index and records how long it took. It
// allocates nothing beyond what the index's FindMatches does.
func (c *Collector) FindMatches(q flash.Query, dst *flash.Scores) {
	t := time.Now()
	c.ix.FindMatches(q, dst)
	c.latency.Observe(time.Since(t).Seconds())
}

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.events, c.rejected, c.blocks, c.queries, c.ids, c.queue, c.workerBlocks, c.workers} {
		ch <- d
	}
	c.latency.Describe(ch)
	if c.sub != nil {
		for _, d := range []*prometheus.Desc{c.subConn, c.subBatches, c.subEvents, c.subDropped, c.subStream, c.subReplayed, c.epUp, c.epSeq} {
			ch <- d
		}
	}
}

func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v uint64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

// Collect reads the index's (and subscriber's) counters.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.ix.Stats()
	counter(ch, c.events, s.StoredApplied, "stored", "applied")
	counter(ch, c.events, s.RemovedApplied, "removed", "applied")
	counter(ch, c.events, s.Clears, "cleared", "applied")
	counter(ch, c.events, s.StoredRejected, "stored", "rejected")
	counter(ch, c.events, s.RemovedRejected, "removed", "rejected")
	counter(ch, c.events, s.ClearedRejected, "cleared", "rejected")
	for _, r := range []struct {
		reason string
		n      uint64
	}{
		{"unknown_parent", s.RejectedUnknownParent}, {"hash_conflict", s.RejectedHashConflict},
		{"empty", s.RejectedEmpty}, {"too_large", s.RejectedTooLarge}, {"too_deep", s.RejectedTooDeep},
		{"too_many_workers", s.RejectedTooManyWorkers}, {"bad_kind", s.RejectedBadKind},
		{"closed", s.RejectedClosed}, {"queue_full", s.RejectedQueueFull},
	} {
		counter(ch, c.rejected, r.n, r.reason)
	}
	counter(ch, c.blocks, s.BlocksStored, "stored")
	counter(ch, c.blocks, s.BlocksDuplicate, "duplicate")
	counter(ch, c.blocks, s.BlocksRemoved, "removed")
	counter(ch, c.blocks, s.RemovesUnknown, "remove_unknown")
	counter(ch, c.blocks, s.WorkersRemoved, "worker_removed")
	counter(ch, c.queries, s.Queries, "queries")
	counter(ch, c.queries, s.QueryBlocks, "blocks")
	counter(ch, c.ids, s.EventGaps, "gap")
	counter(ch, c.ids, s.EventRestarts, "restart")
	if ix, ok := c.ix.(*flash.Indexer); ok {
		for i, n := range ix.QueueDepths(nil) {
			ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(n), strconv.Itoa(i))
		}
		workers := 0
		ix.WorkerBlocks(func(w flash.Worker, n int) {
			workers++
			ch <- prometheus.MustNewConstMetric(c.workerBlocks, prometheus.GaugeValue, float64(n),
				strconv.FormatUint(w.ID, 10), strconv.FormatUint(uint64(w.DPRank), 10))
		})
		ch <- prometheus.MustNewConstMetric(c.workers, prometheus.GaugeValue, float64(workers))
	}
	c.latency.Collect(ch)
	if c.sub == nil {
		return
	}
	u := c.sub.Stats()
	counter(ch, c.subConn, u.Connects, "connect")
	counter(ch, c.subConn, u.Disconnects, "disconnect")
	counter(ch, c.subConn, u.DialFailures, "dial_failure")
	counter(ch, c.subBatches, u.Batches)
	counter(ch, c.subEvents, u.Events)
	counter(ch, c.subDropped, u.Malformed, "malformed")
	counter(ch, c.subDropped, u.BadEvents, "bad_event")
	counter(ch, c.subDropped, u.UnknownEvents, "unknown_event")
	counter(ch, c.subDropped, u.OtherMedium, "other_medium")
	counter(ch, c.subDropped, u.ApplyErrors, "apply_error")
	counter(ch, c.subStream, u.Gaps, "gap")
	counter(ch, c.subStream, u.Restarts, "restart")
	counter(ch, c.subStream, u.LateJoins, "late_join")
	counter(ch, c.subStream, u.Duplicates, "duplicate")
	counter(ch, c.subStream, u.Resyncs, "resync")
	counter(ch, c.subReplayed, u.Replays, "ok")
	counter(ch, c.subReplayed, u.ReplayFailures, "failed")
	counter(ch, c.subReplayed, u.ReplayedBatches, "batches")
	for _, e := range c.sub.Endpoints() {
		up := 0.0
		if e.Connected {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.epUp, prometheus.GaugeValue, up, e.Addr)
		if e.Received {
			ch <- prometheus.MustNewConstMetric(c.epSeq, prometheus.GaugeValue, float64(e.NextSeq), e.Addr)
		}
	}
}
