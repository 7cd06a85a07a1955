package flash_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/flashindexer/flashindexer/flash"
)

// traceRequests loads the Mooncake conversation trace as hash-id lists, or
// skips when the shared notes are not beside the repository.
func traceRequests(b *testing.B) [][]uint64 {
	path := os.Getenv("FLASH_TRACE")
	if path == "" {
		path = "../../shared/traces/conversation_trace.jsonl"
	}
	f, err := os.Open(path)
	if err != nil {
		b.Skipf("trace not found (%v); set FLASH_TRACE", err)
	}
	defer f.Close()
	var reqs [][]uint64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r struct {
			HashIDs []uint64 `json:"hash_ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			b.Fatal(err)
		}
		reqs = append(reqs, r.HashIDs)
	}
	return reqs
}

type traceWorkload struct {
	events  []flash.Event
	queries []flash.Query
	stored  int // blocks in all events
	queried int
}

// newTraceWorkload: one block per trace id, 16 workers round-robin, every
// request stored on its worker, then every request queried.
func newTraceWorkload(reqs [][]uint64, workers int) *traceWorkload {
	tw := &traceWorkload{}
	for i, ids := range reqs {
		blocks := make([]flash.Block, len(ids))
		locals := make([]flash.LocalHash, len(ids))
		for j, id := range ids {
			var b [8]byte
			for k := range b {
				b[k] = byte(id >> (8 * k))
			}
			locals[j] = flash.LocalHash(xxh3.HashSeed(b[:], flash.Seed))
			blocks[j] = flash.Block{Hash: flash.ExternalHash(id + 1), Local: locals[j]}
		}
		tw.events = append(tw.events, flash.StoredEvent(flash.Worker{ID: uint64(i % workers)}, blocks...))
		tw.queries = append(tw.queries, flash.Query{Locals: locals, Seqs: flash.ChainLocals(nil, locals)})
		tw.stored += len(ids)
		tw.queried += len(ids)
	}
	return tw
}

// find stores every request into ix, then measures querying every request.
func (tw *traceWorkload) find(b *testing.B, ix *flash.Indexer) {
	defer ix.Close()
	for i := range tw.events {
		_ = ix.Apply(tw.events[i])
	}
	tw.queryAll(b, ix.FindMatches)
}

// queryAll measures answering every request's query with find.
func (tw *traceWorkload) queryAll(b *testing.B, find func(flash.Query, *flash.Scores)) {
	var sc flash.Scores
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, q := range tw.queries {
			find(q, &sc)
		}
	}
	b.ReportMetric(float64(b.N*tw.queried)/b.Elapsed().Seconds(), "block-ops/s")
}

// naiveIndex is the seed's first generation as a Go engineer would write it:
// worker → local hash → set of sequence hashes.
type naiveIndex map[flash.Worker]map[flash.LocalHash]map[flash.SeqHash]struct{}

func (n naiveIndex) store(ev *flash.Event, seqs []flash.SeqHash) {
	m := n[ev.Worker]
	if m == nil {
		m = map[flash.LocalHash]map[flash.SeqHash]struct{}{}
		n[ev.Worker] = m
	}
	for i, b := range ev.Blocks {
		s := m[b.Local]
		if s == nil {
			s = map[flash.SeqHash]struct{}{}
			m[b.Local] = s
		}
		s[seqs[i]] = struct{}{}
	}
}

func (n naiveIndex) find(q flash.Query, dst *flash.Scores) {
	dst.Reset()
	for w, m := range n {
		d := 0
		for d < len(q.Locals) {
			if _, ok := m[q.Locals[d]][q.Seqs[d]]; !ok {
				break
			}
			d++
		}
		if d > 0 {
			dst.Matches = append(dst.Matches, flash.Match{Worker: w, Depth: d})
		}
	}
}

// BenchmarkTrace measures the workload of the project's goal table: store
// every request of the conversation trace (one block per trace id, 16
// workers round-robin), then query every request; block-ops/s of each phase,
// for flash and the naive nested map, in one run.
func BenchmarkTrace(b *testing.B) {
	reqs := traceRequests(b)
	tw := newTraceWorkload(reqs, 16)
	for _, j := range []int{16, 32, 64} {
		b.Run(fmt.Sprintf("impl=flash/jump=%d/phase=store", j), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				ix := flash.New(flash.WithWriters(0), flash.WithJumpSize(j), flash.WithBlockSize(512), flash.WithMaxWorkers(64))
				b.StartTimer()
				for i := range tw.events {
					_ = ix.Apply(tw.events[i])
				}
				b.StopTimer()
				ix.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N*tw.stored)/b.Elapsed().Seconds(), "block-ops/s")
		})
		b.Run(fmt.Sprintf("impl=flash/jump=%d/phase=find", j), func(b *testing.B) {
			tw.find(b, flash.New(flash.WithWriters(0), flash.WithJumpSize(j), flash.WithBlockSize(512), flash.WithMaxWorkers(64)))
		})
	}
	// Two goroutines store at once, each the events of its lane's workers,
	// into a synchronous index with two lanes, which share one table or
	// have one each; then one goroutine queries.
	for _, tables := range []string{"shared", "lane"} {
		lanes := func() *flash.Indexer {
			return flash.New(flash.WithWriters(0), flash.WithSyncLanes(2), flash.WithLaneTables(tables == "lane"), flash.WithBlockSize(512), flash.WithMaxWorkers(64))
		}
		b.Run("impl=flash/lanes=2/tables="+tables+"/phase=store", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				ix := lanes()
				var mine [2][]*flash.Event
				for i := range tw.events {
					l := ix.LaneOf(tw.events[i].Worker.ID)
					mine[l] = append(mine[l], &tw.events[i])
				}
				var wg sync.WaitGroup
				b.StartTimer()
				for l := range mine {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for _, ev := range mine[l] {
							_ = ix.Apply(*ev)
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				ix.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N*tw.stored)/b.Elapsed().Seconds(), "block-ops/s")
		})
		b.Run("impl=flash/lanes=2/tables="+tables+"/phase=find", func(b *testing.B) { tw.find(b, lanes()) })
	}
	b.Run("impl=naive/phase=store", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n := naiveIndex{}
			for i := range tw.events {
				n.store(&tw.events[i], tw.queries[i].Seqs)
			}
		}
		b.ReportMetric(float64(b.N*tw.stored)/b.Elapsed().Seconds(), "block-ops/s")
	})
	b.Run("impl=naive/phase=find", func(b *testing.B) {
		n := naiveIndex{}
		for i := range tw.events {
			n.store(&tw.events[i], tw.queries[i].Seqs)
		}
		tw.queryAll(b, n.find)
	})
}

// BenchmarkTraceTiers measures tiers' cost on the trace (16 workers, as
// BenchmarkTrace): an index of one tier, and one of two (GPU and CPU) in
// which every block is offloaded (stored on the GPU, then copied to CPU
// memory: held in both). Store block-ops/s count each event once; find
// queries every request; B/pair is the index's memory (Memory().Total())
// per (block, worker) held.
func BenchmarkTraceTiers(b *testing.B) {
	reqs := traceRequests(b)
	tw := newTraceWorkload(reqs, 16)
	for _, tiers := range []int{1, 2} {
		cfg := flash.Config{BlockSize: 512, MaxWorkers: 64, Tiers: []flash.TierSpec{{Name: "GPU"}, {Name: "CPU"}}[:tiers]}
		fill := func(ix *flash.Indexer) {
			for i := range tw.events {
				_ = ix.Apply(tw.events[i])
				if tiers > 1 {
					_ = ix.Apply(tw.events[i].InTier(1))
				}
			}
		}
		name := fmt.Sprintf("tiers=%d", tiers)
		if tiers > 1 {
			name += "/offload=all"
		}
		b.Run(name+"/phase=store", func(b *testing.B) {
			b.ReportAllocs()
			var pairs, bytes int
			for b.Loop() {
				b.StopTimer()
				ix := flash.New(flash.WithConfig(cfg), flash.WithWriters(0))
				b.StartTimer()
				fill(ix)
				b.StopTimer()
				pairs, bytes = 0, ix.Memory().Total()
				ix.WorkerBlocks(func(_ flash.Worker, n int) { pairs += n })
				ix.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N*tw.stored)/b.Elapsed().Seconds(), "block-ops/s")
			b.ReportMetric(float64(bytes)/float64(pairs), "B/pair")
		})
		b.Run(name+"/phase=find", func(b *testing.B) {
			ix := flash.New(flash.WithConfig(cfg), flash.WithWriters(0))
			fill(ix)
			tw.find(b, ix)
		})
	}
}
