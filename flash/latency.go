package flash

import (
	"time"

	"github.com/flashindexer/flashindexer/flash/internal/search"
)

// LatencySampleEvery: FindMatches times one query in 64 of those made
// with one Scores (its first, then every 64th), which costs under 1%.
const LatencySampleEvery = search.SampleEvery

// LatencyHistogram is a snapshot of the sampled query latencies
// (Indexer.QueryLatency): FindMatches times one query in
// LatencySampleEvery, so Count is about Queries/LatencySampleEvery.
type LatencyHistogram struct {
	// Bounds are the buckets' upper bounds, doubling; Counts[i] is the
	// sampled queries under Bounds[i] and at or over Bounds[i-1], and the
	// last count, past Bounds, those at or over the last bound.
	Bounds []time.Duration
	Counts []uint64
	Count  uint64        // sampled queries
	Sum    time.Duration // their time
}

// QueryLatency returns the histogram of sampled FindMatches latencies:
// every FindMatches call is a candidate, one in LatencySampleEvery is
// timed. It allocates the snapshot: for metrics, not hot paths.
func (ix *Indexer) QueryLatency() LatencyHistogram {
	h := LatencyHistogram{Bounds: make([]time.Duration, search.LatencyBuckets-1), Counts: make([]uint64, search.LatencyBuckets)}
	h.Count, h.Sum = ix.search.Latency.Read(h.Bounds, h.Counts)
	return h
}
