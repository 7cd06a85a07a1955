package flash_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
	"github.com/flashindexer/flashindexer/flash/model"
)

// Snapshots hold no predictions: a restored worker has none, and the
// others keep theirs.
func TestFlash_RestoreDropsPredictions(t *testing.T) {
	ix := flash.New(flash.WithWriters(2))
	defer ix.Close()
	p := flashtest.Seqs(1, 6)
	w1, w2 := flash.Worker{ID: 1}, flash.Worker{ID: 2}
	_ = ix.Apply(p.StoreEvent(w1, 0, 2, 0))
	for _, w := range []flash.Worker{w1, w2} {
		if err := ix.Predict(w, flash.Query{Locals: p}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	var snap bytes.Buffer
	if _, err := ix.Dump(&snap, w1); err != nil {
		t.Fatal(err)
	}
	if err := ix.Restore(&snap); err != nil {
		t.Fatal(err)
	}
	ix.Flush()
	var sc flash.Scores
	ix.FindMatches(flash.Query{Locals: p}, &sc)
	sc.Sort()
	want := []flash.Match{
		{Worker: w2, Depth: 6, Tokens: 6 * flash.DefaultBlockSize, Predicted: 6, TierDepth: [flash.MaxTiers]int32{6}},
		{Worker: w1, Depth: 2, Tokens: 2 * flash.DefaultBlockSize, Blocks: 2, TierDepth: [flash.MaxTiers]int32{2}},
	}
	if len(sc.Matches) != 2 || sc.Matches[0] != want[0] || sc.Matches[1] != want[1] {
		t.Fatalf("after Restore: %+v, want %+v", sc.Matches, want)
	}
}

// Queries running while writers apply events, predictions and expiries
// see well-formed answers: each worker once, 0 ≤ Predicted ≤ Depth ≤ the
// query's blocks; and once everything is applied and flushed, the index
// answers as the model fed the same calls.
func TestFlash_PredictConcurrent(t *testing.T) {
	var now atomic.Int64
	cfg := flash.DefaultConfig()
	cfg.MaxWorkers, cfg.MaxPredicted = 64, 40
	cfg.Clock = func() time.Duration { return time.Duration(now.Load()) }
	ix := flash.New(flash.WithWriters(2), flash.WithConfig(cfg))
	defer ix.Close()
	ref := model.New(cfg)
	prompts := make([]flashtest.Prompt, 6)
	for i := range prompts {
		prompts[i] = flashtest.Concat(flashtest.Seqs(1, 4), flashtest.Seqs(uint64(10+i), 12))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sc flash.Scores
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := prompts[(i+r)%len(prompts)]
				ix.FindMatches(flash.Query{Locals: p}, &sc)
				seen := map[flash.Worker]bool{}
				for _, m := range sc.Matches {
					if seen[m.Worker] || m.Predicted < 0 || m.Predicted > m.Depth || m.Depth > len(p) || m.Depth < 1 {
						t.Errorf("bad match %+v in %+v", m, sc.Matches)
						return
					}
					seen[m.Worker] = true
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for step := range 3000 {
		w := flash.Worker{ID: uint64(rng.IntN(12))}
		p := prompts[rng.IntN(len(prompts))]
		n := 1 + rng.IntN(len(p))
		switch rng.IntN(4) {
		case 0:
			ev := p.StoreEvent(w, 0, n, 0)
			_, _ = ix.Apply(ev), ref.Apply(ev)
		case 1:
			ev := flash.RemovedEvent(w, p.Hash(rng.IntN(n), 0))
			_, _ = ix.Apply(ev), ref.Apply(ev)
		default:
			q, ttl := flash.Query{Locals: p[:n]}, time.Duration(1+rng.IntN(20))
			_, _ = ix.Predict(w, q, ttl), ref.Predict(w, q, ttl)
		}
		if step%10 == 0 {
			now.Add(1)
		}
	}
	close(stop)
	wg.Wait()
	ix.Flush()
	var a, b flash.Scores
	for _, p := range prompts {
		ix.FindMatches(flash.Query{Locals: p}, &a)
		ref.FindMatches(flash.Query{Locals: p}, &b)
		a.Sort()
		b.Sort()
		if !slices.Equal(a.Matches, b.Matches) {
			t.Fatalf("after the run:\n got   %v\n model %v", a.Matches, b.Matches)
		}
	}
}

// A prediction longer than Config.MaxPredicted keeps what the cap allows
// without making the rest, and the predicted blocks' memory follows what
// they hold: it goes when they expire or the worker is cleared. One
// 262,144-block prediction once kept 13 MiB per worker for good.
func TestFlash_LongPredictionBounded(t *testing.T) {
	for _, writers := range []int{0, 2} {
		t.Run(fmt.Sprintf("writers=%d", writers), func(t *testing.T) {
			var now atomic.Int64
			cfg := flash.DefaultConfig()
			cfg.MaxPredicted = 1000
			cfg.Clock = func() time.Duration { return time.Duration(now.Load()) }
			ix := flash.New(flash.WithWriters(writers), flash.WithConfig(cfg))
			defer ix.Close()
			long := flashtest.Seqs(1, flash.DefaultMaxBatch)
			const workers = 4
			for id := uint64(1); id <= workers; id++ {
				if err := ix.Predict(flash.Worker{ID: id}, flash.Query{Locals: long}, 10); err != nil {
					t.Fatal(err)
				}
			}
			ix.Flush()
			var sc flash.Scores
			ix.FindMatches(flash.Query{Locals: long[:2000]}, &sc)
			if len(sc.Matches) != workers || sc.Matches[0].Depth != 1000 || sc.Matches[0].Predicted != 1000 {
				t.Fatalf("matches %+v, want %d workers at depth 1000", sc.Matches, workers)
			}
			// The cap's blocks, their heap and their content map: well under
			// 100 bytes a block.
			if m := ix.Memory(); m.Predictions > workers*1000*100 {
				t.Fatalf("%d workers holding 1,000 predicted blocks each keep %d bytes", workers, m.Predictions)
			}
			now.Add(10) // every prediction expires
			ix.Flush()
			if m := ix.Memory(); m.Predictions != 0 {
				t.Fatalf("expired predictions keep %d bytes", m.Predictions)
			}
			// Cleared takes them too.
			w := flash.Worker{ID: 1}
			_ = ix.Apply(long.StoreEvent(w, 0, 3, 0))
			_ = ix.Predict(w, flash.Query{Locals: long[:5000]}, 10)
			_ = ix.Apply(flash.ClearedEvent(w))
			ix.Flush()
			if m := ix.Memory(); m.Predictions != 0 {
				t.Fatalf("a cleared worker's predictions keep %d bytes", m.Predictions)
			}
		})
	}
}

// A ttl past the clock's range saturates: the prediction lasts, where
// now+ttl once wrapped negative and it expired at once.
func TestFlash_HugeTTLLasts(t *testing.T) {
	for _, writers := range []int{0, 2} {
		var now atomic.Int64
		now.Store(int64(time.Hour))
		cfg := flash.DefaultConfig()
		cfg.Clock = func() time.Duration { return time.Duration(now.Load()) }
		ix := flash.New(flash.WithWriters(writers), flash.WithConfig(cfg))
		p := flashtest.Seqs(1, 4)
		if err := ix.Predict(flash.Worker{ID: 1}, flash.Query{Locals: p}, math.MaxInt64); err != nil {
			t.Fatal(err)
		}
		now.Add(int64(time.Hour))
		ix.Flush()
		var sc flash.Scores
		ix.FindMatches(flash.Query{Locals: p}, &sc)
		if len(sc.Matches) != 1 || sc.Matches[0].Predicted != 4 {
			t.Fatalf("writers=%d: a prediction for MaxInt64 is gone after an hour: %+v", writers, sc.Matches)
		}
		ix.Close()
	}
}

// After Close, a Flush still drops the predictions expired at its call, as
// the package comment says, with writers as without: a closed index with
// writers once reported expired predictions forever.
func TestFlash_ClosedIndexDropsExpired(t *testing.T) {
	for _, writers := range []int{0, 2} {
		var now atomic.Int64
		cfg := flash.DefaultConfig()
		cfg.Clock = func() time.Duration { return time.Duration(now.Load()) }
		ix := flash.New(flash.WithWriters(writers), flash.WithConfig(cfg))
		p := flashtest.Seqs(1, 4)
		if err := ix.Predict(flash.Worker{ID: 1}, flash.Query{Locals: p}, 10); err != nil {
			t.Fatal(err)
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		var sc flash.Scores
		ix.FindMatches(flash.Query{Locals: p}, &sc)
		if len(sc.Matches) != 1 {
			t.Fatalf("writers=%d: a closed index answers %+v, want its prediction", writers, sc.Matches)
		}
		now.Add(10)
		ix.Flush()
		ix.FindMatches(flash.Query{Locals: p}, &sc)
		if len(sc.Matches) != 0 {
			t.Fatalf("writers=%d: a closed index reports an expired prediction after Flush: %+v", writers, sc.Matches)
		}
	}
}
