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
