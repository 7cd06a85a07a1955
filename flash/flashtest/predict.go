package flashtest

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/flash"
)

// clock is a manual Config.Clock: predictions' time moves only when a test
// moves it.
type clock struct{ t atomic.Int64 }

func (c *clock) now() time.Duration  { return time.Duration(c.t.Load()) }
func (c *clock) set(t time.Duration) { c.t.Store(int64(t)) }
func (c *clock) add(d time.Duration) { c.t.Add(int64(d)) }
func (c *clock) config(maxPredicted int) flash.Config {
	cf := cfg()
	cf.Clock, cf.MaxPredicted = c.now, maxPredicted
	return cf
}

// pfixture is a fixture whose index is a Predictor, on a manual clock.
type pfixture struct {
	*fixture
	p   flash.Predictor
	clk *clock
}

// newPredictFixture skips the case when f's indexes record no predictions.
func newPredictFixture(t testing.TB, f Factory, maxPredicted int) *pfixture {
	clk := &clock{}
	x := newFixture(t, f, clk.config(maxPredicted))
	p, ok := x.idx.(flash.Predictor)
	if !ok {
		t.Skip("the backend records no predictions")
	}
	return &pfixture{x, p, clk}
}

// predict records that w holds p's first n blocks for ttl.
func (x *pfixture) predict(w flash.Worker, p Prompt, n int, ttl time.Duration) {
	x.t.Helper()
	if err := x.p.Predict(w, flash.Query{Locals: p[:n]}, ttl); err != nil {
		x.t.Fatalf("Predict(%v, %d blocks, %v): %v", w, n, ttl, err)
	}
}

// expectBoth checks each worker's depth and exact depth for p (want[w] =
// {depth, exact}), asked with and without sequence hashes.
func (x *pfixture) expectBoth(p Prompt, want map[flash.Worker][2]int) {
	x.t.Helper()
	bothForms(p, func(q flash.Query, withSeq bool) {
		x.t.Helper()
		x.find(q)
		got := map[flash.Worker][2]int{}
		for _, m := range x.sc.Matches {
			got[m.Worker] = [2]int{m.Depth, m.Depth - m.Predicted}
			if m.Tokens != m.Depth*flash.DefaultBlockSize || m.Predicted < 0 || m.Predicted > m.Depth {
				x.t.Fatalf("match %+v: tokens or exact depth out of line", m)
			}
		}
		if len(got) != len(want) {
			x.t.Fatalf("query of %d blocks (seqs=%v): got %v, want %v", len(p), withSeq, got, want)
		}
		for w, d := range want {
			if got[w] != d {
				x.t.Fatalf("query of %d blocks (seqs=%v): got %v, want %v", len(p), withSeq, got, want)
			}
		}
	})
}

// stat reads one counter after a Flush.
func (x *pfixture) stat(f func(flash.Stats) uint64) uint64 {
	x.idx.Flush()
	return f(x.idx.Stats())
}

var predictCases = []testCase{
	{"predict_find", func(t testing.TB, f Factory) {
		x := newPredictFixture(t, f, 0)
		p := Seqs(1, 8)
		x.predict(W(1), p, 8, time.Second)
		x.store(W(2), p, 0, 4)
		x.expectBoth(p, map[flash.Worker][2]int{W(1): {8, 0}, W(2): {4, 4}})
		// Another prompt sharing p's first 3 blocks.
		q := Concat(p[:3], Seqs(2, 5))
		x.expectBoth(q, map[flash.Worker][2]int{W(1): {3, 0}, W(2): {3, 3}})
		// A predicted worker holds a slot and no blocks.
		x.blocks(W(1), 0)
		x.idx.FindMatches(flash.Query{Locals: p}, &x.sc)
		for _, m := range x.sc.Matches {
			if m.Worker == W(1) && m.Blocks != 0 {
				t.Fatalf("predicted worker: %+v, want 0 blocks", m)
			}
		}
		if n := x.stat(func(s flash.Stats) uint64 { return s.Predictions }); n != 1 {
			t.Fatalf("Stats.Predictions = %d, want 1", n)
		}
	}},
	{"predict_exact_and_predicted", func(t testing.TB, f Factory) {
		// Exact blocks and predictions join: depth through either, exact
		// depth through events alone.
		x := newPredictFixture(t, f, 0)
		p := Seqs(1, 10)
		x.store(W(1), p, 0, 4)
		x.predict(W(1), p, 8, time.Second)
		x.expectBoth(p, map[flash.Worker][2]int{W(1): {8, 4}})
		x.store(W(1), p, 4, 10)
		x.expectBoth(p, map[flash.Worker][2]int{W(1): {10, 10}})
	}},
	{"predict_expires", func(t testing.TB, f Factory) {
		x := newPredictFixture(t, f, 0)
		p := Seqs(1, 8)
		x.predict(W(1), p, 8, 10)
		x.clk.set(9)
		x.expectBoth(p, map[flash.Worker][2]int{W(1): {8, 0}})
		x.clk.set(10) // a prediction lasts while now < its expiry
		x.expectBoth(p, nil)
	}},
	{"predict_extends", func(t testing.TB, f Factory) {
		// A later prediction of a prefix extends its blocks only; a shorter
		// ttl never shortens one.
		x := newPredictFixture(t, f, 0)
		p := Seqs(1, 8)
		x.predict(W(1), p, 8, 10)
		x.clk.set(5)
		x.predict(W(1), p, 4, 10)
		x.predict(W(1), p, 2, 1)
		x.clk.set(12)
		x.expectBoth(p, map[flash.Worker][2]int{W(1): {4, 0}})
		x.clk.set(15)
		x.expectBoth(p, nil)
	}},
	{"predict_removed_drops_below", func(t testing.TB, f Factory) {
		// Removing an exact block drops its prediction and every predicted
		// block below it: storing it again brings back only what is stored.
		x := newPredictFixture(t, f, 0)
		p := Seqs(1, 8)
		x.store(W(1), p, 0, 4)
		x.predict(W(1), p, 8, time.Second)
		x.remove(W(1), p.Hash(2, 0))
		x.expectBoth(p, map[flash.Worker][2]int{W(1): {2, 2}})
		x.apply(p.StoreEvent(W(1), 2, 3, 0).WithParent(p.Hash(1, 0)))
		x.expectBoth(p, map[flash.Worker][2]int{W(1): {4, 4}})
		// Another worker's predictions are untouched.
		x.predict(W(2), p, 8, time.Second)
		x.remove(W(1), p.Hash(0, 0))
		x.expectBoth(p, map[flash.Worker][2]int{W(2): {8, 0}})
	}},
	{"predict_cleared_and_removed_worker", func(t testing.TB, f Factory) {
		x := newPredictFixture(t, f, 0)
		p := Seqs(1, 8)
		x.store(W(1), p, 0, 2)
		x.predict(W(1), p, 8, time.Second)
		x.predict(W(2), p, 6, time.Second)
		x.apply(flash.ClearedEvent(W(1)))
		x.expectBoth(p, map[flash.Worker][2]int{W(2): {6, 0}})
		if err := x.idx.RemoveWorker(2); err != nil {
			t.Fatal(err)
		}
		x.expectBoth(p, nil)
		// The slot is free again, and a new prediction starts afresh.
		x.predict(W(2), p, 3, time.Second)
		x.expectBoth(p, map[flash.Worker][2]int{W(2): {3, 0}})
	}},
	{"predict_cap", func(t testing.TB, f Factory) {
		// Past MaxPredicted the blocks expiring first leave first, the
		// deepest first: a worker's predictions stay prefix-closed.
		x := newPredictFixture(t, f, 6)
		a, b := Seqs(1, 4), Seqs(2, 4)
		x.predict(W(1), a, 4, 10)
		x.predict(W(1), b, 4, 20)
		x.expectBoth(a, map[flash.Worker][2]int{W(1): {2, 0}})
		x.expectBoth(b, map[flash.Worker][2]int{W(1): {4, 0}})
		// One prompt longer than the cap keeps its first blocks.
		c := Seqs(3, 9)
		x.predict(W(2), c, 9, 10)
		x.expectBoth(c, map[flash.Worker][2]int{W(2): {6, 0}})
		// Expired blocks leave room first; then the new ones, which
		// expire before b's.
		x.clk.set(10)
		x.predict(W(1), c, 4, 5)
		x.expectBoth(b, map[flash.Worker][2]int{W(1): {4, 0}})
		x.expectBoth(c, map[flash.Worker][2]int{W(1): {2, 0}})
	}},
	{"predict_crafted_collision", func(t testing.TB, f Factory) {
		// Predicted blocks whose contents mix to one word (see
		// CollidingLocal) are two contents: both predictions hold.
		x := newPredictFixture(t, f, 0)
		ab := P(1, 2)
		l0 := Prompt{CollidingLocal(1, ab.Seq()[1])}
		x.predict(W(1), ab, 2, time.Second)
		x.predict(W(1), l0, 1, time.Second)
		x.expectBoth(l0, map[flash.Worker][2]int{W(1): {1, 0}})
		x.expectBoth(ab, map[flash.Worker][2]int{W(1): {2, 0}})
		x.predict(W(2), l0, 1, time.Second)
		x.predict(W(2), ab, 2, time.Second)
		x.expectBoth(l0, map[flash.Worker][2]int{W(1): {1, 0}, W(2): {1, 0}})
		x.expectBoth(ab, map[flash.Worker][2]int{W(1): {2, 0}, W(2): {2, 0}})
	}},
	{"predict_rejects", func(t testing.TB, f Factory) {
		x := newPredictFixture(t, f, 0)
		p := Seqs(1, 4)
		for _, c := range []struct {
			q    flash.Query
			ttl  time.Duration
			want error
		}{
			{flash.Query{}, time.Second, flash.ErrEmptyEvent},
			{flash.Query{Locals: p}, 0, flash.ErrBadTTL},
			{flash.Query{Locals: p}, -time.Second, flash.ErrBadTTL},
			{flash.Query{Locals: Seqs(2, flash.DefaultMaxDepth+1)}, time.Second, flash.ErrBatchTooLarge},
		} {
			if err := x.p.Predict(W(1), c.q, c.ttl); err != c.want {
				t.Fatalf("Predict(%d blocks, ttl %v) = %v, want %v", len(c.q.Locals), c.ttl, err, c.want)
			}
		}
		if n := x.stat(func(s flash.Stats) uint64 { return s.PredictionsRejected }); n != 4 {
			t.Fatalf("Stats.PredictionsRejected = %d, want 4", n)
		}
		x.expectBoth(p, nil)
		if err := x.idx.Close(); err != nil {
			t.Fatal(err)
		}
		if err := x.p.Predict(W(1), flash.Query{Locals: p}, time.Second); err != flash.ErrClosed {
			t.Fatalf("Predict after Close = %v, want ErrClosed", err)
		}
	}},
}
