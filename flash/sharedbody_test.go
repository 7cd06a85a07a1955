package flash_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
)

// sharedBody is prompt i of the shared-body workload: a first block of its
// own, then the same 64 blocks as every other prompt (one document after
// many preambles): every prompt puts the body's chunks at the same
// positions, under a different prefix.
func sharedBody(body flashtest.Prompt, i int) flashtest.Prompt {
	return flashtest.Concat(flashtest.Seqs(uint64(1_000_000+i), 1), body)
}

// buildSharedBody stores n shared-body prompts, prompt i on worker i mod 64.
func buildSharedBody(n int) (*flash.Indexer, flashtest.Prompt) {
	body := flashtest.Seqs(7, 64)
	ix := flash.New(flash.WithWriters(0), flash.WithMaxWorkers(128))
	for i := 0; i < n; i++ {
		_ = ix.Apply(sharedBody(body, i).StoreEvent(flash.Worker{ID: uint64(i % 64)}, 0, 65, 0))
	}
	return ix, body
}

// BenchmarkSharedBody: N prompts [u_i, c1 … c64] that differ in their first
// block only. The index is built once per N (its time reported as build-s);
// op=query asks for one of them, op=store stores one more 65-block prompt
// (and removes it again outside the timer).
func BenchmarkSharedBody(b *testing.B) {
	for _, n := range []int{1, 1000, 10000} {
		var ix *flash.Indexer
		var body flashtest.Prompt
		var build time.Duration
		setup := func() {
			if ix == nil {
				t0 := time.Now()
				ix, body = buildSharedBody(n)
				build = time.Since(t0)
			}
		}
		b.Run(fmt.Sprintf("op=query/n=%d", n), func(b *testing.B) {
			setup()
			q := flash.Query{Locals: sharedBody(body, n/2)}
			var sc flash.Scores
			for b.Loop() {
				ix.FindMatches(q, &sc)
			}
			if len(sc.Matches) != 1 || sc.Matches[0].Depth != 65 {
				b.Fatalf("matches %v", sc.Matches)
			}
			b.ReportMetric(build.Seconds(), "build-s")
		})
		b.Run(fmt.Sprintf("op=store/n=%d", n), func(b *testing.B) {
			setup()
			w := flash.Worker{ID: 999}
			evs := make([]flash.Event, 1000)
			for i := range evs {
				evs[i] = sharedBody(body, n+i).StoreEvent(w, 0, 65, 0)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := ix.Apply(evs[i%len(evs)]); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				_ = ix.Apply(flash.ClearedEvent(w))
				b.StartTimer()
			}
		})
	}
}

// The shared-body workload answers exactly: every prompt's worker at full
// depth, every other worker at depth 0 or (sharing no first block) absent.
func TestSharedBody_Exact(t *testing.T) {
	const n = 300
	ix, body := buildSharedBody(n)
	defer ix.Close()
	var sc flash.Scores
	for _, i := range []int{0, 1, n / 2, n - 1} {
		ix.FindMatches(flash.Query{Locals: sharedBody(body, i)}, &sc)
		want := map[uint64]bool{}
		for j := i % 64; j < n; j += 64 {
			if j == i || sharedBody(body, j)[0] == sharedBody(body, i)[0] {
				want[uint64(j%64)] = true
			}
		}
		if len(sc.Matches) != len(want) {
			t.Fatalf("prompt %d: matches %v", i, sc.Matches)
		}
		for _, m := range sc.Matches {
			if !want[m.Worker.ID] || m.Depth != 65 {
				t.Fatalf("prompt %d: match %+v", i, m)
			}
		}
	}
}
