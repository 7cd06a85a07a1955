package flash_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
)

// churn applies random stores (some under a second engine id), removes
// (some mid-chain: ghosts and detached blocks) and clears.
func churn(ix flash.Index, r *rand.Rand, prompts []flashtest.Prompt, workers, steps int) {
	for i := 0; i < steps; i++ {
		w := flash.Worker{ID: uint64(r.IntN(workers)), DPRank: uint32(r.IntN(2))}
		p := prompts[r.IntN(len(prompts))]
		switch k := r.IntN(20); {
		case k < 11:
			from := 0
			if r.IntN(3) == 0 {
				from = r.IntN(len(p))
			}
			salt := uint64(r.IntN(8) / 7)
			_ = ix.Apply(p.StoreEvent(w, from, min(len(p), from+1+r.IntN(40)), salt))
		case k < 19:
			_ = ix.Apply(flash.RemovedEvent(w, p.Hash(r.IntN(len(p)), uint64(r.IntN(8)/7))))
		default:
			_ = ix.Apply(flash.ClearedEvent(w))
		}
	}
	ix.Flush()
}

func snapshotPrompts() []flashtest.Prompt {
	base := flashtest.Seqs(1, 120)
	ps := []flashtest.Prompt{base}
	for i := 0; i < 5; i++ {
		p := append(flashtest.Prompt{}, base...)
		p[5+i*20] = flashtest.L(uint64(900 + i)) // same chunks after a divergence
		ps = append(ps, p, flashtest.Concat(base[:30+i*10], flashtest.Seqs(uint64(10+i), 40)))
	}
	return ps
}

// answers records every prompt's matches and every worker's block count.
func answers(ix flash.Index, prompts []flashtest.Prompt, workers int) string {
	var sc flash.Scores
	var b bytes.Buffer
	for _, p := range prompts {
		for _, n := range []int{1, 7, 33, len(p)} {
			ix.FindMatches(flash.Query{Locals: p[:n]}, &sc)
			sc.Sort()
			fmt.Fprintln(&b, sc.Matches)
		}
	}
	for w := 0; w < workers; w++ {
		for r := uint32(0); r < 2; r++ {
			fmt.Fprint(&b, ix.BlockCount(flash.Worker{ID: uint64(w), DPRank: r}), " ")
		}
	}
	return b.String()
}

// A snapshot restores into an index of any shape: from one table to a table
// per lane and back.
func TestSnapshot_RestoreAnswersAlike(t *testing.T) {
	prompts := snapshotPrompts()
	for _, c := range []struct {
		writers  int
		src, dst bool // a table per lane
		name     string
	}{
		{0, false, false, "writers=0"},
		{2, false, false, "writers=2"},
		{2, true, false, "writers=2/lane-tables-to-one"},
		{2, false, true, "writers=2/one-to-lane-tables"},
	} {
		writers := c.writers
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(writers), 9))
			src := flash.New(flash.WithWriters(writers), flash.WithMaxWorkers(64), flash.WithLaneTables(c.src))
			defer src.Close()
			churn(src, r, prompts, 12, 3000)
			want := answers(src, prompts, 12)
			var snap bytes.Buffer
			ids, err := src.Dump(&snap)
			if err != nil {
				t.Fatal(err)
			}
			if st := src.Stats(); ids == 0 || st.BlocksRemoved == 0 {
				t.Fatalf("%d ids dumped, %d blocks removed: the churn did not build state", ids, st.BlocksRemoved)
			}
			dst := flash.New(flash.WithWriters(writers), flash.WithMaxWorkers(64), flash.WithLaneTables(c.dst))
			defer dst.Close()
			if err := dst.Restore(bytes.NewReader(snap.Bytes())); err != nil {
				t.Fatal(err)
			}
			dst.Flush()
			if got := answers(dst, prompts, 12); got != want {
				t.Fatalf("restored index answers differently:\n got %s\nwant %s", got, want)
			}
			// Restoring over a changed index brings its workers back to the
			// snapshot; and the restored index keeps working like the source.
			churn(dst, rand.New(rand.NewPCG(5, 5)), prompts, 12, 500)
			if err := dst.Restore(bytes.NewReader(snap.Bytes())); err != nil {
				t.Fatal(err)
			}
			// A worker the snapshot does not have keeps its state; clear the
			// ones churn may have added to compare.
			for w := 0; w < 12; w++ {
				for rk := uint32(0); rk < 2; rk++ {
					x := flash.Worker{ID: uint64(w), DPRank: rk}
					if src.BlockCount(x) == 0 && dst.BlockCount(x) != 0 {
						_ = dst.Apply(flash.ClearedEvent(x))
					}
				}
			}
			dst.Flush()
			if got := answers(dst, prompts, 12); got != want {
				t.Fatal("restore over a changed index differs from the snapshot")
			}
			churn(src, rand.New(rand.NewPCG(6, 6)), prompts, 12, 500)
			churn(dst, rand.New(rand.NewPCG(6, 6)), prompts, 12, 500)
			if answers(src, prompts, 12) != answers(dst, prompts, 12) {
				t.Fatal("source and restored index diverge under the same events")
			}
		})
	}
}

func TestSnapshot_OneWorker(t *testing.T) {
	prompts := snapshotPrompts()
	src := flash.New(flash.WithWriters(0))
	defer src.Close()
	churn(src, rand.New(rand.NewPCG(1, 1)), prompts, 4, 800)
	w := flash.Worker{ID: 2}
	var snap bytes.Buffer
	if _, err := src.Dump(&snap, w); err != nil {
		t.Fatal(err)
	}
	dst := flash.New(flash.WithWriters(0))
	defer dst.Close()
	if err := dst.Restore(&snap); err != nil {
		t.Fatal(err)
	}
	if dst.BlockCount(w) != src.BlockCount(w) || dst.Workers() != 1 {
		t.Fatalf("blocks %d vs %d, %d workers", dst.BlockCount(w), src.BlockCount(w), dst.Workers())
	}
}

func TestSnapshot_BadInputChangesNothing(t *testing.T) {
	prompts := snapshotPrompts()
	src := flash.New(flash.WithWriters(0))
	defer src.Close()
	churn(src, rand.New(rand.NewPCG(2, 2)), prompts, 6, 1000)
	var snap bytes.Buffer
	if _, err := src.Dump(&snap); err != nil {
		t.Fatal(err)
	}
	good := snap.Bytes()
	dst := flash.New(flash.WithWriters(0))
	defer dst.Close()
	churn(dst, rand.New(rand.NewPCG(3, 3)), prompts, 6, 300)
	before := answers(dst, prompts, 6)
	r := rand.New(rand.NewPCG(4, 4))
	for i := 0; i < 200; i++ {
		bad := slices.Clone(good)
		switch i % 3 {
		case 0:
			bad = bad[:r.IntN(len(bad))]
		case 1:
			bad[r.IntN(len(bad))] ^= byte(1 + r.IntN(255))
		case 2:
			bad = append(bad, byte(r.IntN(256)))
		}
		if err := dst.Restore(bytes.NewReader(bad)); !errors.Is(err, flash.ErrSnapshot) {
			t.Fatalf("case %d: Restore of a damaged snapshot: %v", i, err)
		}
	}
	if answers(dst, prompts, 6) != before {
		t.Fatal("a rejected snapshot changed the index")
	}
	small := flash.New(flash.WithWriters(0), flash.WithMaxWorkers(2))
	defer small.Close()
	if err := small.Restore(bytes.NewReader(good)); !errors.Is(err, flash.ErrTooManyWorkers) {
		t.Fatalf("Restore past MaxWorkers: %v", err)
	}
	if small.Workers() != 0 {
		t.Fatal("a refused restore interned workers")
	}
}

// BenchmarkSnapshot reports dump and restore speed and snapshot size on the
// Apply benchmark's state grown to 4,096 prompts.
func BenchmarkSnapshot(b *testing.B) {
	src := flash.New(flash.WithWriters(0), flash.WithMaxWorkers(64))
	defer src.Close()
	for i := 0; i < 4096; i++ {
		p := flashtest.Concat(flashtest.Seqs(0, 16), flashtest.Seqs(uint64(i+1), 48))
		_ = src.Apply(p.StoreEvent(flash.Worker{ID: uint64(i % 16)}, 0, 64, 0))
	}
	var snap bytes.Buffer
	ids, _ := src.Dump(&snap)
	b.Run("op=dump", func(b *testing.B) {
		t0 := time.Now()
		for b.Loop() {
			var buf bytes.Buffer
			_, _ = src.Dump(&buf)
		}
		b.ReportMetric(float64(ids*b.N)/time.Since(t0).Seconds(), "blocks/s")
		b.ReportMetric(float64(snap.Len())/float64(ids), "bytes/block")
	})
	b.Run("op=restore", func(b *testing.B) {
		t0 := time.Now()
		for b.Loop() {
			dst := flash.New(flash.WithWriters(0), flash.WithMaxWorkers(64))
			if err := dst.Restore(bytes.NewReader(snap.Bytes())); err != nil {
				b.Fatal(err)
			}
			dst.Close()
		}
		b.ReportMetric(float64(ids*b.N)/time.Since(t0).Seconds(), "blocks/s")
	})
}

// FuzzRestore: a snapshot body (sealed with its checksum, so that fuzzing
// reaches the structural checks) either is refused with ErrSnapshot or
// ErrTooManyWorkers and changes nothing, or restores a state that a second
// Dump and Restore reproduce, with the same answers (the flash_invariants
// build checks every restored worker's state too).
func FuzzRestore(f *testing.F) {
	ix := flash.New(flash.WithWriters(0), flash.WithMaxWorkers(8))
	churn(ix, rand.New(rand.NewPCG(3, 4)), snapshotPrompts(), 3, 200)
	var b bytes.Buffer
	if _, err := ix.Dump(&b); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes()[:b.Len()-8])
	prompts := snapshotPrompts()
	f.Fuzz(func(t *testing.T, body []byte) {
		data := binary.LittleEndian.AppendUint64(slices.Clone(body), xxh3.Hash(body))
		ix := flash.New(flash.WithWriters(0), flash.WithMaxWorkers(8))
		before := answers(ix, prompts, 8)
		if err := ix.Restore(bytes.NewReader(data)); err != nil {
			if !errors.Is(err, flash.ErrSnapshot) && !errors.Is(err, flash.ErrTooManyWorkers) {
				t.Fatalf("Restore: %v", err)
			}
			if after := answers(ix, prompts, 8); after != before {
				t.Fatal("a refused snapshot changed the index")
			}
			return
		}
		var d bytes.Buffer
		if _, err := ix.Dump(&d); err != nil {
			t.Fatal(err)
		}
		again := flash.New(flash.WithWriters(0), flash.WithMaxWorkers(8))
		if err := again.Restore(bytes.NewReader(d.Bytes())); err != nil {
			t.Fatalf("the index's own Dump is refused: %v", err)
		}
		var d2 bytes.Buffer
		if _, err := again.Dump(&d2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(d.Bytes(), d2.Bytes()) || answers(ix, prompts, 8) != answers(again, prompts, 8) {
			t.Fatal("Dump and Restore do not reproduce a restored state")
		}
	})
}

// A snapshot whose last worker holds more removed blocks (kept for the
// blocks below them, with no engine id: 20 bytes a node) than held ones
// restores: the reader once asked 24 bytes of every node and refused it.
func TestSnapshot_GhostsRestore(t *testing.T) {
	p := flashtest.Seqs(3, 40)
	for _, c := range []struct {
		name           string
		stored, remove int
	}{
		{"stored=12/removed=11", 12, 11},
		{"stored=3/removed=2", 3, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := flash.Worker{ID: 1}
			src := flash.New(flash.WithWriters(0))
			defer src.Close()
			if err := src.Apply(p.StoreEvent(w, 0, c.stored, 0)); err != nil {
				t.Fatal(err)
			}
			hs := make([]flash.ExternalHash, c.remove)
			for i := range hs {
				hs[i] = p.Hash(i, 0)
			}
			if err := src.Apply(flash.RemovedEvent(w, hs...)); err != nil {
				t.Fatal(err)
			}
			dst := restoreOwn(t, src)
			if a, b := dst.BlockCount(w), src.BlockCount(w); a != b || a != c.stored-c.remove {
				t.Fatalf("restored %d blocks, source %d", a, b)
			}
			// The removed prefix stored again re-attaches the kept blocks.
			for _, ix := range []*flash.Indexer{src, dst} {
				if err := ix.Apply(p.StoreEvent(w, 0, c.remove, 0)); err != nil {
					t.Fatal(err)
				}
			}
			if a, b := answers(dst, []flashtest.Prompt{p}, 2), answers(src, []flashtest.Prompt{p}, 2); a != b {
				t.Fatalf("restored index answers\n%s\nsource\n%s", a, b)
			}
		})
	}
}

// A worker holding two contents whose mixed hashes collide (see
// flashtest.CollidingLocal) dumps both and restores them: the index once
// filed one under the other's node and refused its own snapshot.
func TestSnapshot_CraftedCollisionRestores(t *testing.T) {
	w := flash.Worker{ID: 1}
	ab := flashtest.P(1, 2)
	l0 := flashtest.Prompt{flashtest.CollidingLocal(1, ab.Seq()[1])}
	src := flash.New(flash.WithWriters(0))
	defer src.Close()
	for _, ev := range []flash.Event{ab.StoreEvent(w, 0, 2, 0), ab.StoreEvent(w, 0, 2, 1), l0.StoreEvent(w, 0, 1, 0)} {
		if err := src.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	dst := restoreOwn(t, src)
	var sc flash.Scores
	for _, p := range []flashtest.Prompt{ab, l0} {
		dst.FindMatches(flash.Query{Locals: p}, &sc)
		if len(sc.Matches) != 1 || sc.Matches[0].Depth != len(p) {
			t.Fatalf("restored: %d blocks match %v, want all", len(p), sc.Matches)
		}
	}
}

// A Restore with more new workers than free slots changes nothing, also
// when an event that takes a slot was accepted before it and is still
// queued: the check once ran before such events applied, and the restore
// then replaced a worker before it failed.
func TestSnapshot_FailedRestoreChangesNothing(t *testing.T) {
	c, d, e := flash.Worker{ID: 3}, flash.Worker{ID: 4}, flash.Worker{ID: 5}
	var snap bytes.Buffer
	src := flash.New(flash.WithWriters(0))
	_ = src.Apply(flashtest.P(1).StoreEvent(c, 0, 1, 0))
	_ = src.Apply(flashtest.P(7, 8).StoreEvent(e, 0, 2, 0))
	if _, err := src.Dump(&snap); err != nil {
		t.Fatal(err)
	}
	src.Close()
	for trial := 0; trial < 200; trial++ {
		ix := flash.New(flash.WithWriters(2), flash.WithMaxWorkers(2))
		if err := ix.Apply(flashtest.P(9).StoreEvent(e, 0, 1, 0)); err != nil {
			t.Fatal(err)
		}
		ix.Flush()
		if err := ix.Apply(flashtest.P(2).StoreEvent(d, 0, 1, 0)); err != nil {
			t.Fatal(err)
		}
		err := ix.Restore(bytes.NewReader(snap.Bytes()))
		ix.Flush()
		if !errors.Is(err, flash.ErrTooManyWorkers) {
			t.Fatalf("trial %d: Restore = %v, want ErrTooManyWorkers", trial, err)
		}
		want := map[flash.Worker]int{c: 0, d: 1, e: 1}
		for w, n := range want {
			if got := ix.BlockCount(w); got != n {
				t.Fatalf("trial %d: after a failed Restore %v holds %d blocks, want %d", trial, w, got, n)
			}
		}
		var sc flash.Scores
		ix.FindMatches(flash.Query{Locals: flashtest.P(9)}, &sc)
		if len(sc.Matches) != 1 || sc.Matches[0].Worker != e {
			t.Fatalf("trial %d: after a failed Restore [9] matches %v, want %v", trial, sc.Matches, e)
		}
		ix.Close()
	}
}

// restoreOwn dumps src, restores the snapshot into a new synchronous index
// (closed when the test ends) and fails the test if it is refused.
func restoreOwn(t *testing.T, src *flash.Indexer) *flash.Indexer {
	t.Helper()
	var snap bytes.Buffer
	if _, err := src.Dump(&snap); err != nil {
		t.Fatal(err)
	}
	dst := flash.New(flash.WithWriters(0))
	t.Cleanup(func() { _ = dst.Close() })
	if err := dst.Restore(&snap); err != nil {
		t.Fatalf("Restore of Dump's own snapshot: %v", err)
	}
	return dst
}
