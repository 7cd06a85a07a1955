// Package flashprom exports a flash index's statistics, and a kvevents
// Subscriber's, as Prometheus metrics.
//
//	ix := flash.New()
//	sub := kvevents.New(ix)
//	c := flashprom.New(ix, flashprom.WithSubscriber(sub))
//	prometheus.MustRegister(c)
//	...
//
// Counters are read from Stats at scrape time, so the index's hot paths pay
// nothing for them. The query-latency histogram of a *flash.Indexer is its
// own (Indexer.QueryLatency: every FindMatches call is a candidate, one in
// flash.LatencySampleEvery is timed); other indexes' queries are timed
// when made through Collector.FindMatches.
//
// Every metric, with the namespace "flash":
//
//	flash_events_total{kind,outcome}          events by kind (stored, removed, cleared) and outcome (applied, rejected)
//	flash_rejected_total{reason}              rejected events by reason
//	flash_blocks_total{op}                    blocks stored (newly held), duplicate, removed, remove_unknown (not held)
//	flash_workers_removed_total               RemoveWorker calls that removed a worker
//	flash_queries_total                       FindMatches calls
//	flash_query_blocks_total                  the query blocks they looked at
//	flash_query_hits_total                    queries some worker matched (hit rate: ÷ flash_queries_total)
//	flash_query_matched_blocks_total          the deepest match's blocks, summed (÷ flash_query_blocks_total: blocks found cached)
//	flash_query_duration_seconds              FindMatches latency, sampled (histogram)
//	flash_predictions_total{outcome}          Predict calls applied or rejected
//	flash_event_id_anomalies_total{kind}      event ids that skipped ahead (gap) or went back (restart)
//	flash_queue_depth{writer}                 events waiting in each writer's queue
//	flash_worker_blocks{worker,dp_rank}       blocks each worker holds
//	flash_workers                             workers holding a slot
//	flash_routed_blocks_total{tier}           of the requests routed (ObserveRoute), the blocks found in each tier (the index's tier names) and those to prefill (tier="none")
//
// and with WithSubscriber:
//
//	flash_kvevents_connections_total{event}   connect, disconnect, dial_failure
//	flash_kvevents_batches_total              batches decoded and applied
//	flash_kvevents_events_total               events handed to the index
//	flash_kvevents_dropped_total{reason}      input dropped: malformed, bad_event, unknown_event, unknown_medium, apply_error
//	flash_kvevents_stream_total{kind}         gap, restart, late_join, duplicate, resync
//	flash_kvevents_replays_total{result}      replay requests that recovered (ok) or did not (failed)
//	flash_kvevents_replayed_batches_total     batches the replays returned
//	flash_kvevents_endpoint_up{endpoint}      1 while the endpoint's connection is up
//	flash_kvevents_endpoint_next_seq{endpoint} the sequence number each endpoint sends next
package flashprom

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/kvevents"
)

// Collector is a prometheus.Collector for one index (and optionally one
// Subscriber). Safe for concurrent use.
type Collector struct {
	ix      flash.Index
	flash   *flash.Indexer // ix, when it is one: its own latency histogram
	sub     *kvevents.Subscriber
	latency prometheus.Histogram // other indexes': Collector.FindMatches

	events, rejected, blocks, workersRemoved, ids    *prometheus.Desc
	queries, queryBlocks, hits, matched, predictions *prometheus.Desc
	duration, queue, workerBlocks, workers           *prometheus.Desc
	subConn, subBatches, subEvents                   *prometheus.Desc
	subDropped, subStream, subReplays, subReplayed   *prometheus.Desc
	epUp, epSeq                                      *prometheus.Desc
	routed                                           *prometheus.Desc

	tiers []string                          // the index's tier names, then "none"
	route [flash.MaxTiers + 1]atomic.Uint64 // ObserveRoute's blocks by tier, then none
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
// seconds (default: 250 ns to about 1 ms, doubling), for an index other
// than a *flash.Indexer, whose buckets are its own (128 ns to 2.1 ms,
// doubling).
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
	fx, _ := ix.(*flash.Indexer)
	tiers := flash.DefaultTiers
	if c, ok := ix.(interface{ Config() flash.Config }); ok {
		tiers = c.Config().Normalize().Tiers
	}
	var names []string
	for _, t := range tiers {
		names = append(names, t.Name)
	}
	const durationHelp = "FindMatches latency: one call in 64 timed (a *flash.Indexer's own sampling), or the calls made through the collector."
	return &Collector{
		ix:    ix,
		flash: fx,
		sub:   s.sub,
		tiers: append(names, "none"),
		routed: d("routed_blocks_total", "Of the requests a router routed (ObserveRoute), the blocks the chosen worker holds in each tier, "+
			"faster tiers first (a block counts in the fastest tier it is in), and the blocks left to prefill (none).", "tier"),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: s.ns, Name: "query_duration_seconds", ConstLabels: s.labels,
			Help:    durationHelp,
			Buckets: s.buckets,
		}),
		duration:       d("query_duration_seconds", durationHelp),
		events:         d("events_total", "Events by kind and outcome (applied or rejected).", "kind", "outcome"),
		rejected:       d("rejected_total", "Rejected events (and RemoveWorker calls after Close) by reason.", "reason"),
		blocks:         d("blocks_total", "Blocks by what happened to them: stored (newly held), duplicate (already held), removed, remove_unknown (not held).", "op"),
		workersRemoved: d("workers_removed_total", "RemoveWorker calls that removed at least one DP rank."),
		queries:        d("queries_total", "FindMatches calls."),
		queryBlocks:    d("query_blocks_total", "Query blocks FindMatches looked at."),
		hits:           d("query_hits_total", "FindMatches calls some worker matched (by events or predictions): the hit rate is this over queries_total."),
		matched:        d("query_matched_blocks_total", "The deepest match's blocks, summed over the queries: over query_blocks_total, the share of query blocks found cached."),
		predictions:    d("predictions_total", "Predict calls by outcome (applied or rejected).", "outcome"),
		ids:            d("event_id_anomalies_total", "Event ids that skipped ahead (gap) or went back (restart), when the index tracks them.", "kind"),
		queue:          d("queue_depth", "Events waiting in (or being applied from) each writer's queue.", "writer"),
		workerBlocks:   d("worker_blocks", "Blocks each worker (DP rank) holds.", "worker", "dp_rank"),
		workers:        d("workers", "Workers (DP ranks) holding a slot."),
		subConn:        d("kvevents_connections_total", "Subscriber connection changes: connect, disconnect, dial_failure.", "event"),
		subBatches:     d("kvevents_batches_total", "Batches decoded and applied, replayed ones included."),
		subEvents:      d("kvevents_events_total", "Events the subscriber handed to the index."),
		subDropped:     d("kvevents_dropped_total", "Input the subscriber dropped, by reason: malformed (whole batches), bad_event (token count or block size), unknown_event, unknown_medium, apply_error.", "reason"),
		subStream:      d("kvevents_stream_total", "Stream anomalies: gap, restart, late_join, duplicate, resync (workers cleared after an unrecovered loss).", "kind"),
		subReplays:     d("kvevents_replays_total", "Replay requests that recovered (ok) or did not (failed).", "result"),
		subReplayed:    d("kvevents_replayed_batches_total", "Batches the replays returned."),
		epUp:           d("kvevents_endpoint_up", "1 while the endpoint's connection is up.", "endpoint"),
		epSeq:          d("kvevents_endpoint_next_seq", "The sequence number each endpoint is expected to send next (once it has sent one).", "endpoint"),
	}
}

// ObserveQuery records one query's duration, for an index other than a
// *flash.Indexer (which times its own queries).
func (c *Collector) ObserveQuery(d time.Duration) {
	if c.flash == nil {
		c.latency.Observe(d.Seconds())
	}
}

// FindMatches answers q from the index; an index other than a
// *flash.Indexer has it timed into the latency histogram. It allocates
// nothing beyond what the index's FindMatches does.
func (c *Collector) FindMatches(q flash.Query, dst *flash.Scores) {
	if c.flash != nil {
		c.flash.FindMatches(q, dst) // timed by the index, sampled
		return
	}
	t := time.Now()
	c.ix.FindMatches(q, dst)
	c.latency.Observe(time.Since(t).Seconds())
}

// ObserveRoute records a routed request of blocks query blocks sent to the
// worker of m (its match for the request; the zero Match when no worker
// matched): the blocks found in each tier (TierDepth[t] − TierDepth[t−1])
// and the rest, to prefill. It allocates nothing.
func (c *Collector) ObserveRoute(m flash.Match, blocks int) {
	n := len(c.tiers) - 1
	prev := int32(0)
	for t := range n {
		d := min(int(m.TierDepth[t]), blocks)
		if d > int(prev) {
			c.route[t].Add(uint64(d - int(prev)))
			prev = int32(d)
		}
	}
	if blocks > int(prev) {
		c.route[n].Add(uint64(blocks - int(prev)))
	}
}

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.events, c.rejected, c.blocks, c.workersRemoved, c.queries, c.queryBlocks, c.hits, c.matched, c.predictions, c.ids, c.queue, c.workerBlocks, c.workers, c.routed} {
		ch <- d
	}
	if c.flash != nil {
		ch <- c.duration
	} else {
		c.latency.Describe(ch)
	}
	if c.sub != nil {
		for _, d := range []*prometheus.Desc{c.subConn, c.subBatches, c.subEvents, c.subDropped, c.subStream, c.subReplays, c.subReplayed, c.epUp, c.epSeq} {
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
		{"closed", s.RejectedClosed}, {"queue_full", s.RejectedQueueFull}, {"bad_tier", s.RejectedBadTier},
	} {
		counter(ch, c.rejected, r.n, r.reason)
	}
	counter(ch, c.blocks, s.BlocksStored, "stored")
	counter(ch, c.blocks, s.BlocksDuplicate, "duplicate")
	counter(ch, c.blocks, s.BlocksRemoved, "removed")
	counter(ch, c.blocks, s.RemovesUnknown, "remove_unknown")
	counter(ch, c.workersRemoved, s.WorkersRemoved)
	for t, name := range c.tiers {
		counter(ch, c.routed, c.route[t].Load(), name)
	}
	counter(ch, c.queries, s.Queries)
	counter(ch, c.queryBlocks, s.QueryBlocks)
	counter(ch, c.hits, s.QueryHits)
	counter(ch, c.matched, s.QueryMatchedBlocks)
	counter(ch, c.predictions, s.Predictions, "applied")
	counter(ch, c.predictions, s.PredictionsRejected, "rejected")
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
	if c.flash != nil {
		h := c.flash.QueryLatency()
		buckets := make(map[float64]uint64, len(h.Bounds))
		cum := uint64(0)
		for i, b := range h.Bounds {
			cum += h.Counts[i]
			buckets[b.Seconds()] = cum
		}
		ch <- prometheus.MustNewConstHistogram(c.duration, h.Count, h.Sum.Seconds(), buckets)
	} else {
		c.latency.Collect(ch)
	}
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
	counter(ch, c.subDropped, u.UnknownMedium, "unknown_medium")
	counter(ch, c.subDropped, u.ApplyErrors, "apply_error")
	counter(ch, c.subStream, u.Gaps, "gap")
	counter(ch, c.subStream, u.Restarts, "restart")
	counter(ch, c.subStream, u.LateJoins, "late_join")
	counter(ch, c.subStream, u.Duplicates, "duplicate")
	counter(ch, c.subStream, u.Resyncs, "resync")
	counter(ch, c.subReplays, u.Replays, "ok")
	counter(ch, c.subReplays, u.ReplayFailures, "failed")
	counter(ch, c.subReplayed, u.ReplayedBatches)
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
