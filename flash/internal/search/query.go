package search

import (
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/flashindexer/flashindexer/jump"
)

// State is what a caller's result keeps between its queries (flash.Scores'
// buffers): the worker-set scratch of the jump search, the chain computed
// as deep as the search reaches, the predicted-block search's scratch, and
// the calls made, which pick the timed ones.
type State struct {
	sets   []uint64
	seqs   []uint64
	pred   Scratch
	calls  uint32
	Probes int // entries the last search looked up
}

// SampleEvery: Find times one query in 64 of those made with one State
// (its first, then every 64th): two clock reads, some 40 ns, spread over 64
// queries cost under 1% of the shortest query's time, where timing every
// query would cost a third of it.
const SampleEvery = 64

// Find writes into hits (emptied) every worker's depth for the query of
// locals, and returns them; seqs are its sequence hashes, or nil to chain
// them from locals as deep as the search reaches. It counts the query in
// ix.Tally under key (the caller's result: queries with one result count
// into one stripe) and times it into ix.Latency when it is a sample.
func (ix *Index) Find(st *State, key uintptr, locals, seqs []uint64, hits []Hit) []Hit {
	n := len(locals)
	st.Probes = 0
	if n == 0 {
		if ix.Tally.Count(key, 0, 0) {
			ix.Tally.Fold(key)
		}
		return hits[:0]
	}
	st.calls++
	timed := st.calls%SampleEvery == 1
	var t0 time.Time
	if timed {
		t0 = time.Now()
	}
	need := jump.Scratch(ix.Words, ix.Jump)
	if cap(st.sets) < need {
		st.sets = make([]uint64, need)
	}
	computed := n
	if seqs == nil {
		if cap(st.seqs) < n {
			st.seqs = make([]uint64, n)
		}
		seqs, computed = st.seqs[:n], 0
	}
	var f Finder
	f.Start(ix, locals, seqs, computed, hits[:0])
	if ix.Tiers > 1 {
		st.Probes = f.RunTiered(st.sets[:need], &st.pred)
	} else {
		st.Probes = f.Run(st.sets[:need], &st.pred)
	}
	if timed {
		ix.Latency.observe(time.Since(t0))
	}
	switch deepest := f.Deepest(); {
	case n >= BigBlocks:
		ix.Tally.CountBig(key, n, deepest)
	case ix.Tally.Count(key, n, deepest):
		ix.Tally.Fold(key)
	}
	return f.Hits()
}

// LatencyBuckets: bucket 0 holds queries under 2^7 ns (128 ns), bucket i
// those under 2^(7+i) ns, the last (2^21 ns, 2.1 ms, and over) the rest:
// every query this index answers falls in the doubling buckets.
const (
	LatencyBuckets  = 16
	latencyMinShift = 7
)

// Latency is the sampled queries' histogram, updated with atomics by the
// sampled queries themselves. It sits apart, on lines of its own, so that
// its writes do not disturb the fields every query reads.
type Latency struct {
	_       [64]byte
	buckets [LatencyBuckets]atomic.Uint64
	sumNs   atomic.Uint64
	_       [64]byte
}

func (l *Latency) observe(d time.Duration) {
	ns := uint64(max(d, 0))
	l.buckets[min(bits.Len64(ns>>latencyMinShift), LatencyBuckets-1)].Add(1)
	l.sumNs.Add(ns)
}

// Read writes the buckets' upper bounds into bounds (LatencyBuckets-1 of
// them) and their counts into counts (LatencyBuckets), and returns the
// samples and their time.
func (l *Latency) Read(bounds []time.Duration, counts []uint64) (n uint64, sum time.Duration) {
	for i := range bounds[:LatencyBuckets-1] {
		bounds[i] = time.Duration(1) << (latencyMinShift + i)
	}
	for i := range counts[:LatencyBuckets] {
		counts[i] = l.buckets[i].Load()
		n += counts[i]
	}
	return n, time.Duration(l.sumNs.Load())
}
