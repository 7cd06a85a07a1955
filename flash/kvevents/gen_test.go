package kvevents

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/kvevents/kvtest"
	"github.com/flashindexer/flashindexer/flash/model"
)

const testBlock = 4 // tokens per block in these tests

// workload is a pool of prompts with shared prefixes, as the tokens a
// router would see.
type workload struct{ prompts [][]uint32 }

func newWorkload(rng *rand.Rand, n int) *workload {
	w := &workload{}
	for i := 0; i < n; i++ {
		var p []uint32
		if i > 0 && rng.IntN(2) == 0 { // share a prefix with an earlier prompt
			q := w.prompts[rng.IntN(i)]
			p = append(p, q[:testBlock*rng.IntN(len(q)/testBlock+1)]...)
		}
		for len(p) < testBlock*(4+rng.IntN(8)) {
			p = append(p, uint32(rng.IntN(50)))
		}
		p = p[:len(p)/testBlock*testBlock]
		w.prompts = append(w.prompts, p)
	}
	return w
}

// engineHash is an engine's opaque id for a block: here a function of the
// prefix, as vLLM's are (so equal prefixes on two engines share ids).
func engineHash(prompt []uint32, blocks int) uint64 {
	h := flash.HashTokens(prompt[:blocks*testBlock], 99)
	return uint64(h) | 1
}

// engine generates one engine's events (one DP rank) and remembers what it
// holds, roughly: the events are the test input, the model the judge.
type engine struct {
	w    *workload
	rng  *rand.Rand
	held map[int]int // prompt -> blocks stored from 0
}

func newEngine(w *workload, seed uint64) *engine {
	return &engine{w: w, rng: rand.New(rand.NewPCG(seed, 7)), held: map[int]int{}}
}

// event returns one wire event and the flash event the router expects for
// worker w (computed the router's way, with TokenHasher).
func (e *engine) event(w flash.Worker) (wire []any, want flash.Event) {
	r := e.rng.IntN(40)
	switch {
	case r < 24 || len(e.held) == 0:
		pi := e.rng.IntN(len(e.w.prompts))
		p := e.w.prompts[pi]
		n := len(p) / testBlock
		from := e.held[pi]
		if from >= n {
			from = 0 // stored again: duplicates
		}
		to := from + 1 + e.rng.IntN(n-from)
		var hashes []uint64
		for b := from; b < to; b++ {
			hashes = append(hashes, engineHash(p, b+1))
		}
		var parent any
		toks := p[from*testBlock : to*testBlock]
		locals := flash.NewTokenHasher(testBlock, "").LocalHashes(nil, toks)
		blocks := make([]flash.Block, len(hashes))
		for i := range blocks {
			blocks[i] = flash.Block{Hash: flash.ExternalHash(hashes[i]), Local: locals[i]}
		}
		want = flash.StoredEvent(w, blocks...)
		if from > 0 {
			ph := engineHash(p, from)
			parent = ph
			want = want.WithParent(flash.ExternalHash(ph))
		}
		e.held[pi] = max(e.held[pi], to)
		return kvtest.Stored(hashes, parent, slices.Clone(toks), testBlock, nil, "GPU"), want
	case r < 39:
		keys := make([]int, 0, len(e.held))
		for k := range e.held {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		pi := keys[e.rng.IntN(len(keys))]
		d := e.held[pi]
		h := engineHash(e.w.prompts[pi], d) // the deepest block first, as engines evict
		if d <= 1 {
			delete(e.held, pi)
		} else {
			e.held[pi] = d - 1
		}
		return kvtest.Removed([]uint64{h}, "GPU"), flash.RemovedEvent(w, flash.ExternalHash(h))
	default:
		clear(e.held)
		return kvtest.Cleared(), flash.ClearedEvent(w)
	}
}

// compare checks that ix answers every prompt of wl (and every prefix
// length's depth) as m does, and that block counts agree.
func compare(ix, m flash.Index, wl *workload, workers []flash.Worker) string {
	h := flash.NewTokenHasher(testBlock, "")
	var q flash.Query
	var a, b flash.Scores
	for i, p := range wl.prompts {
		h.Query(&q, p)
		ix.FindMatches(q, &a)
		m.FindMatches(q, &b)
		a.Sort()
		b.Sort()
		if !slices.Equal(a.Matches, b.Matches) {
			return fmt.Sprintf("matches differ: prompt %d, index %v, model %v", i, a.Matches, b.Matches)
		}
	}
	for _, w := range workers {
		if got, want := ix.BlockCount(w), m.BlockCount(w); got != want {
			return fmt.Sprintf("block counts differ: worker %v, index %d, model %d", w, got, want)
		}
	}
	return ""
}

// matched returns the number of (prompt, worker) matches m has.
func matched(m flash.Index, wl *workload) int {
	h := flash.NewTokenHasher(testBlock, "")
	var q flash.Query
	var sc flash.Scores
	n := 0
	for _, p := range wl.prompts {
		h.Query(&q, p)
		m.FindMatches(q, &sc)
		n += len(sc.Matches)
	}
	return n
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newModel() *model.Model {
	return model.New(flash.Config{BlockSize: testBlock})
}
