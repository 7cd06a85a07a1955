package flash

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// LatencySampleEvery: FindMatches times one query in 64 of those made
// with one Scores (its first, then every 64th): two clock reads, some
// 40 ns, spread over 64 queries cost under 1% of the shortest query's
// time, where timing every query would cost a third of it.
const LatencySampleEvery = 64

// latencyBuckets: bucket 0 holds queries under 2^7 ns (128 ns), bucket i
// those under 2^(7+i) ns, the last (2^21 ns, 2.1 ms, and over) the rest:
// every query this index answers falls in the doubling buckets.
const (
	latencyBuckets  = 16
	latencyMinShift = 7
)

// queryLatency is the sampled queries' histogram, updated with atomics by
// the sampled queries themselves. It sits apart, on lines of its own, so
// that its writes do not disturb the fields every query reads.
type queryLatency struct {
	_       [64]byte
	buckets [latencyBuckets]atomic.Uint64
	sumNs   atomic.Uint64
	_       [64]byte
}

func (l *queryLatency) observe(d time.Duration) {
	ns := uint64(max(d, 0))
	l.buckets[min(bits.Len64(ns>>latencyMinShift), latencyBuckets-1)].Add(1)
	l.sumNs.Add(ns)
}

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
	h := LatencyHistogram{Bounds: make([]time.Duration, latencyBuckets-1), Counts: make([]uint64, latencyBuckets)}
	for i := range h.Bounds {
		h.Bounds[i] = time.Duration(1) << (latencyMinShift + i)
	}
	for i := range h.Counts {
		h.Counts[i] = ix.latency.buckets[i].Load()
		h.Count += h.Counts[i]
	}
	h.Sum = time.Duration(ix.latency.sumNs.Load())
	return h
}
