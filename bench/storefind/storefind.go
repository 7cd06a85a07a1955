// Package storefind is the write path's yardstick: the conversation trace
// stored into Flash and into the cost floor of remembering (worker, block)
// pairs, a bare nested Go map, on the same inputs in one process; then every
// request queried against both.
//
// The inputs: one engine block per trace id (block size 512), request i on
// worker i mod W, its engine ids its sequence hashes. A full workload sends
// one Stored event per request with all its blocks; a delta workload sends
// only the blocks the worker does not hold yet, under the last block it
// holds. Hashing happens here, outside any timer.
package storefind

import (
	"github.com/flashindexer/flashindexer/bench/trace"
	"github.com/flashindexer/flashindexer/flash"
)

// Workload is a trace turned into events and queries for W workers.
type Workload struct {
	Workers int
	Events  []flash.Event
	// Seqs[i] are the sequence hashes of Events[i]'s blocks.
	Seqs    [][]flash.SeqHash
	Queries []flash.Query
	// Blocks is the number of blocks in Events; Queried, in Queries.
	Blocks, Queried int
	// Pairs is the number of distinct (block, worker) pairs stored.
	Pairs int
	// Capacity is the most distinct blocks one worker holds.
	Capacity int
}

// Build turns reqs into a workload for workers; delta sends only the blocks
// a worker does not hold yet.
func Build(reqs []trace.Request, workers int, delta bool) (*Workload, error) {
	h, err := trace.NewHasher(trace.TraceBlockTokens)
	if err != nil {
		return nil, err
	}
	wl := &Workload{Workers: workers}
	held := make([]map[flash.SeqHash]struct{}, workers)
	for i := range held {
		held[i] = map[flash.SeqHash]struct{}{}
	}
	var locals []flash.LocalHash
	for i, r := range reqs {
		locals = h.Locals(locals[:0], r)
		if len(locals) == 0 {
			continue
		}
		seqs := flash.ChainLocals(nil, locals)
		w := i % workers
		wl.Queries = append(wl.Queries, flash.Query{Locals: append([]flash.LocalHash(nil), locals...), Seqs: seqs})
		wl.Queried += len(seqs)
		from := 0
		if delta {
			for from < len(seqs) {
				if _, ok := held[w][seqs[from]]; !ok {
					break
				}
				from++
			}
			if from == len(seqs) {
				continue
			}
		}
		blocks := make([]flash.Block, 0, len(seqs)-from)
		for j := from; j < len(seqs); j++ {
			blocks = append(blocks, flash.Block{Hash: flash.ExternalHash(seqs[j]), Local: locals[j]})
			held[w][seqs[j]] = struct{}{}
		}
		ev := flash.StoredEvent(flash.Worker{ID: uint64(w)}, blocks...)
		if from > 0 {
			ev = ev.WithParent(flash.ExternalHash(seqs[from-1]))
		}
		wl.Events = append(wl.Events, ev)
		wl.Seqs = append(wl.Seqs, seqs[from:])
		wl.Blocks += len(blocks)
	}
	for _, m := range held {
		wl.Pairs += len(m)
		wl.Capacity = max(wl.Capacity, len(m))
	}
	return wl, nil
}

// NewFlash returns the index wl is stored into: synchronous (the caller is
// the writer), one bit per worker; when hint > 0, capacity hints and every
// worker declared ahead (AddWorker), as a router declares the engines it
// knows with their capacity; with reserve, their state made ahead too
// (flash.WithReservedCapacity).
func NewFlash(wl *Workload, hint int, reserve bool) (*flash.Indexer, error) {
	opts := []flash.Option{flash.WithWriters(0), flash.WithBlockSize(trace.TraceBlockTokens), flash.WithMaxWorkers(wl.Workers)}
	if hint > 0 {
		opts = append(opts, flash.WithWorkerCapacity(hint))
		if reserve {
			opts = append(opts, flash.WithReservedCapacity())
		}
	}
	ix := flash.New(opts...)
	if hint > 0 {
		for w := range wl.Workers {
			if err := ix.AddWorker(flash.Worker{ID: uint64(w)}); err != nil {
				ix.Close()
				return nil, err
			}
		}
	}
	return ix, nil
}

// Naive is the bare nested map: worker → sequence hash → present.
type Naive map[uint64]map[uint64]struct{}

// NewNaive returns an empty map; with hint > 0 every worker of wl has its
// map made for hint blocks (the workers declared ahead, as
// flash.Indexer.AddWorker declares them to Flash).
func NewNaive(wl *Workload, hint int) Naive {
	n := Naive{}
	if hint > 0 {
		for w := range wl.Workers {
			n[uint64(w)] = make(map[uint64]struct{}, hint)
		}
	}
	return n
}

// Store inserts every block of event i of wl.
func (n Naive) Store(wl *Workload, i, hint int) {
	w := wl.Events[i].Worker.ID
	m := n[w]
	if m == nil {
		m = make(map[uint64]struct{}, hint)
		n[w] = m
	}
	for _, s := range wl.Seqs[i] {
		m[uint64(s)] = struct{}{}
	}
}

// Find writes into dst every worker holding a prefix of q, with its depth.
func (n Naive) Find(q flash.Query, dst *flash.Scores) {
	dst.Reset()
	for w, m := range n {
		d := 0
		for d < len(q.Seqs) {
			if _, ok := m[uint64(q.Seqs[d])]; !ok {
				break
			}
			d++
		}
		if d > 0 {
			dst.Matches = append(dst.Matches, flash.Match{Worker: flash.Worker{ID: w}, Depth: d})
		}
	}
}
