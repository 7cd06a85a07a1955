package flash_test

import (
	"fmt"

	"github.com/flashindexer/flashindexer/flash"
)

// A router builds one index, feeds it every worker's cache events and asks it
// where to send each request.
func Example() {
	const blockSize = 4
	ix := flash.New(flash.WithBlockSize(blockSize), flash.WithMaxWorkers(64))
	defer ix.Close()

	hasher := flash.NewTokenHasher(blockSize, "") // base model, no LoRA
	prompt := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}

	// Worker 1 cached the whole prompt, worker 2 its first two blocks. The
	// engine names blocks with its own ids; here 100, 101, 102.
	locals := hasher.LocalHashes(nil, prompt)
	blocks := []flash.Block{{Hash: 100, Local: locals[0]}, {Hash: 101, Local: locals[1]}, {Hash: 102, Local: locals[2]}}
	_ = ix.Apply(flash.StoredEvent(flash.Worker{ID: 1}, blocks...))
	_ = ix.Apply(flash.StoredEvent(flash.Worker{ID: 2}, blocks[:2]...))
	// Worker 2 later evicts block 101.
	_ = ix.Apply(flash.RemovedEvent(flash.Worker{ID: 2}, 101))
	ix.Flush() // only needed to see the events at once; routers need not wait

	// Route a request: hash its tokens once, ask, reuse the Scores.
	var q flash.Query
	hasher.Query(&q, prompt)
	var scores flash.Scores
	ix.FindMatches(q, &scores)
	scores.Sort()
	for _, m := range scores.Matches {
		fmt.Printf("worker %d: %d blocks, %d tokens cached\n", m.Worker.ID, m.Depth, m.Tokens)
	}
	best, _ := scores.Best()
	fmt.Println("send to worker", best.Worker.ID)
	// Output:
	// worker 1: 3 blocks, 12 tokens cached
	// worker 2: 1 blocks, 4 tokens cached
	// send to worker 1
}

// The README's Usage: one worker caches a prompt's blocks, and a router
// asks where the prompt's prefix is cached.
func Example_usage() {
	idx := flash.New(flash.WithBlockSize(4), flash.WithMaxWorkers(256))
	defer idx.Close()
	h := flash.NewTokenHasher(4, "") // block size 4, base model
	prompt := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}
	var q flash.Query
	h.Query(&q, prompt) // local + sequence hashes of its 3 full blocks, one pass

	// Events from worker 7: it cached the prompt's blocks under its own ids.
	w := flash.Worker{ID: 7}
	blocks := make([]flash.Block, len(q.Locals))
	for i, l := range q.Locals {
		blocks[i] = flash.Block{Hash: flash.ExternalHash(100 + i), Local: l}
	}
	_ = idx.Apply(flash.StoredEvent(w, blocks...))
	idx.Flush() // events apply on writer goroutines: wait for them here

	// Route: which workers hold the longest prefix?
	var scores flash.Scores // reuse it: zero allocations per query
	idx.FindMatches(q, &scores)
	if best, ok := scores.Best(); ok {
		fmt.Println(best.Worker.ID, best.Depth, best.Tokens)
	}
	// Output: 7 3 12
}

// The README's predictions: a router records where it sent a request, and
// the next request sharing its prefix follows it before any event comes.
func Example_predictions() {
	idx := flash.New(flash.WithBlockSize(4))
	defer idx.Close()
	h := flash.NewTokenHasher(4, "")
	var q flash.Query
	h.Query(&q, []uint32{1, 2, 3, 4, 5, 6, 7, 8})

	chosen := flash.Worker{ID: 3}                          // the router's choice
	_ = idx.Predict(chosen, q, flash.DefaultPredictionTTL) // ... remembered
	idx.Flush()

	var scores flash.Scores
	idx.FindMatches(q, &scores)
	best, _ := scores.Best()
	fmt.Println(best.Worker.ID, best.Depth, best.Predicted)
	// Output: 3 2 2
}

// An index of two tiers follows an engine that copies its blocks to CPU
// memory and evicts them from the GPU: each match has its depth per tier.
func Example_tiers() {
	idx := flash.New(flash.WithBlockSize(4), flash.WithTiers(flash.TierSpec{Name: "GPU"}, flash.TierSpec{Name: "CPU"}))
	defer idx.Close()
	h := flash.NewTokenHasher(4, "")
	prompt := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	l := h.LocalHashes(nil, prompt)
	w := flash.Worker{ID: 7}
	stored := flash.StoredEvent(w, flash.Block{Hash: 100, Local: l[0]}, flash.Block{Hash: 101, Local: l[1]}, flash.Block{Hash: 102, Local: l[2]})
	_ = idx.Apply(stored)                                    // on the GPU
	_ = idx.Apply(stored.InTier(1))                          // copied to CPU memory
	_ = idx.Apply(flash.RemovedEvent(w, 101, 102).InTier(0)) // evicted from the GPU
	idx.Flush()

	var q flash.Query
	h.Query(&q, prompt)
	var scores flash.Scores
	idx.FindMatches(q, &scores)
	m := scores.Matches[0]
	fmt.Println(m.Depth, m.TierDepth[0], m.TierDepth[1]) // 1 block on the GPU, 2 more in CPU memory
	// Output: 3 1 3
}
