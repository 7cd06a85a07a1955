package flashtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/model"
)

// source drives the operation generator: a seeded PRNG or fuzz bytes.
type source interface {
	intn(n int) int
	done() bool
}

type randSource struct{ r *rand.Rand }

func (s randSource) intn(n int) int { return s.r.IntN(n) }
func (s randSource) done() bool     { return false }

type byteSource struct {
	b   []byte
	end bool
}

func (s *byteSource) intn(n int) int {
	if len(s.b) == 0 {
		s.end = true
		return 0
	}
	v := int(s.b[0])
	s.b = s.b[1:]
	if n > 256 && len(s.b) > 0 {
		v = v<<8 | int(s.b[0])
		s.b = s.b[1:]
	}
	return v % n
}
func (s *byteSource) done() bool { return s.end }

// differential applies generated operations to an index and to the model and
// compares them after every query.
type differential struct {
	t       testing.TB
	f       Factory
	cfg     flash.Config
	idx     flash.Index
	pred    flash.Predictor // idx, when it records predictions
	clk     clock
	ref     *model.Model
	src     source
	prompts []Prompt
	workers []flash.Worker
	sc, rsc flash.Scores
	step    int
}

// alphabet is small so that different prefixes put the same chunk at the same
// position often (multi entries), and includes local hash 0.
var alphabet = []flash.LocalHash{0, L(1), L(2), L(3)}

// layout is how a differential's workers take their slots: fillers, workers
// that each store a block or three first (before the random ones) and
// nothing after, of which the last removed are removed again; and how many
// prompts the random workers draw from (0: 10).
type layout struct{ fillers, removed, prompts, tiers int }

var (
	// narrow: the random workers alone, in 9 slots.
	narrow = layout{}
	// wide: 60 fillers, so that the random workers' slots are 60 to 68:
	// their bits straddle the end of a set's first word (or plane).
	wide = layout{fillers: 60}
	// wider: sets of more than two words (133 slots: the wide form's low
	// sets, lists and arena slots), the random workers again in slots 60
	// and up, once 64 of 124 fillers are gone: the fillers' shared
	// entries change shape and back as the wider workers come and go,
	// and so do the random workers'.
	wider = layout{fillers: 124, removed: 64}
	// busy: the random workers alone, over 150 prompts: dozens of
	// entries at a position, so that its table grows, and shrinks or
	// goes as workers leave it, and the next tables reuse the replaced.
	busy = layout{prompts: 150}
	// tiered: the random workers alone, over three tiers: each event
	// names one (now and then one the index does not have), Cleared
	// events one or all.
	tiered = layout{tiers: 3}
	// tieredPlanes: three tiers after 18 fillers, 81 places in sets of
	// two words: the random workers' places are 54 to 80, and slot 21's
	// three lie on both sides of the first word's end (or plane's).
	tieredPlanes = layout{fillers: 18, tiers: 3}
)

func newDifferential(t testing.TB, f Factory, src source, seed uint64, lay layout) *differential {
	d := &differential{t: t, src: src}
	c := d.clk.config(50)          // predictions of a few prompts fill it: blocks leave by the cap
	c.MaxWorkers = 9 + lay.fillers // 9 for 12 random workers: ErrTooManyWorkers and slot reuse (wider frees 64 more)
	c.MaxDepth = 400
	if lay.tiers > 1 {
		c.Tiers = tieredConfig(lay.tiers).Tiers
	}
	d.f, d.cfg = f, c
	d.idx, d.ref = f(t, c), model.New(c)
	d.pred, _ = d.idx.(flash.Predictor)
	t.Cleanup(func() { _ = d.idx.Close() })
	r := rand.New(rand.NewPCG(seed, 99))
	pick := func() flash.LocalHash { return alphabet[r.IntN(len(alphabet))] }
	prompts := lay.prompts
	if prompts == 0 {
		prompts = 10
	}
	for i := 0; i < prompts; i++ {
		var p Prompt
		if i > 0 {
			base := d.prompts[r.IntN(len(d.prompts))]
			p = append(p, base[:r.IntN(len(base))]...)
		}
		n := 5 + r.IntN(60)
		if i == 3 {
			n = 330 // crosses several jumps
		}
		for len(p) < n {
			p = append(p, pick())
		}
		d.prompts = append(d.prompts, p)
	}
	for id := uint64(1); id <= 6; id++ {
		d.workers = append(d.workers, flash.Worker{ID: id}, flash.Worker{ID: id, DPRank: 1})
	}
	for i := range lay.fillers {
		p := d.prompts[i%len(d.prompts)]
		d.event(p.StoreEvent(flash.Worker{ID: 1000 + uint64(i)}, 0, 1+i%3, 0))
	}
	for i := lay.fillers - lay.removed; i < lay.fillers; i++ {
		d.removeWorker(1000 + uint64(i))
	}
	return d
}

func (d *differential) run(maxOps int) {
	for d.step = 0; d.step < maxOps && !d.src.done(); d.step++ {
		w := d.workers[d.src.intn(len(d.workers))]
		p := d.prompts[d.src.intn(len(d.prompts))]
		switch op := d.src.intn(100); {
		case op < 45:
			d.event(d.storeEvent(w, p))
		case op < 49:
			// A prompt's leading blocks: the blocks below them stay,
			// and the removed ones are kept for them (nodes with no
			// engine id, which snapshots must carry too); or the whole
			// prompt, which frees its nodes (a worker left with few
			// compacts them).
			salt := uint64(d.src.intn(4) / 3)
			hs := make([]flash.ExternalHash, d.src.intn(len(p)+1)) // or all of them
			for i := range hs {
				hs[i] = p.Hash(i, salt)
			}
			if len(hs) > 0 {
				d.event(d.inTier(flash.RemovedEvent(w, hs...)))
			}
		case op < 60:
			hs := make([]flash.ExternalHash, 1+d.src.intn(3))
			for i := range hs {
				q := d.prompts[d.src.intn(len(d.prompts))]
				hs[i] = q.Hash(d.src.intn(len(q)), uint64(d.src.intn(4)/3))
			}
			d.event(d.inTier(flash.RemovedEvent(w, hs...)))
		case op < 63:
			ev := flash.ClearedEvent(w)
			if d.tiered() && d.src.intn(2) == 0 {
				ev = d.inTier(ev)
			}
			d.event(ev)
		case op < 65:
			d.removeWorker(w.ID)
		case op < 67:
			d.event(flash.Event{Kind: flash.EventKind(d.src.intn(5)), Worker: w})
		case op < 68:
			d.idx.Flush()
		case op < 69:
			d.addWorker(w)
		case op < 76:
			d.predict(w, p)
		case op < 79:
			// Time moves; Flush makes each writer drop what expired.
			d.clk.add(time.Duration(1 + d.src.intn(3)))
			d.idx.Flush()
		case op < 80:
			d.snapshot()
		default:
			d.query(p)
		}
	}
	d.query(d.prompts[3])
	d.compareCounts()
	// Closed, the index answers as the model still: predictions expire
	// at a Flush, with writers as without.
	_, _ = d.idx.Close(), d.ref.Close()
	d.clk.add(time.Duration(1 + d.src.intn(7)))
	d.query(d.prompts[d.src.intn(len(d.prompts))])
}

func (d *differential) storeEvent(w flash.Worker, p Prompt) flash.Event {
	from := 0
	if d.src.intn(2) == 0 {
		from = d.src.intn(len(p))
	}
	to := min(len(p), from+1+d.src.intn(40))
	salt := uint64(d.src.intn(10) / 9)
	ev := p.StoreEvent(w, from, to, salt)
	if from > 0 && d.src.intn(8) == 0 {
		ev.Parent = p.Hash(from-1, 1-salt) // often unknown
	}
	if d.src.intn(20) == 0 { // a hash that is also used at other positions
		ev.Blocks[d.src.intn(len(ev.Blocks))].Hash = flash.ExternalHash(d.src.intn(4))
	}
	return d.inTier(ev)
}

// tiered reports whether the index has more than one tier.
func (d *differential) tiered() bool { return d.cfg.NumTiers() > 1 }

// inTier returns ev in a tier drawn from the source (half of them the
// fastest, one in forty past the index's), or ev as it is when the index
// has one tier.
func (d *differential) inTier(ev flash.Event) flash.Event {
	if !d.tiered() {
		return ev
	}
	n := d.cfg.NumTiers()
	switch {
	case d.src.intn(40) == 0:
		return ev.InTier(flash.Tier(n))
	case d.src.intn(2) == 0:
		return ev.InTier(0)
	}
	return ev.InTier(flash.Tier(d.src.intn(n)))
}

func (d *differential) event(ev flash.Event) {
	// Only one worker's events are ordered by the contract. Whether a new
	// worker gets a slot depends on the other workers' slot changes (new
	// workers, RemoveWorker) around it, so those are applied in program
	// order: flushed before and after.
	newWorker := ev.Kind == flash.KindStored && !d.ref.Known(ev.Worker)
	if newWorker {
		d.idx.Flush()
		defer d.idx.Flush()
	}
	ea, eb := d.idx.Apply(ev), d.ref.Apply(ev)
	if ea != nil && ea != eb {
		d.t.Fatalf("step %d: Apply(%v of %v) = %v, model says %v", d.step, ev.Kind, ev.Worker, ea, eb)
	}
}

// removeWorker removes worker id from the index and the model.
func (d *differential) removeWorker(id uint64) {
	ea, eb := d.idx.RemoveWorker(id), d.ref.RemoveWorker(id)
	if (ea == nil) != (eb == nil) {
		d.t.Fatalf("step %d: RemoveWorker(%d): %v, model %v", d.step, id, ea, eb)
	}
	// Slots are shared by all workers: order the removal before later
	// events of other workers (see event).
	d.idx.Flush()
}

// addWorker declares w in the index (when it is a WorkerAdder) and in the
// model, which must agree on whether a slot was free.
func (d *differential) addWorker(w flash.Worker) {
	a, ok := d.idx.(flash.WorkerAdder)
	if !ok {
		return
	}
	// Slots are shared by all workers: order it after every earlier event.
	d.idx.Flush()
	ea, eb := a.AddWorker(w), d.ref.AddWorker(w)
	if !errors.Is(ea, eb) {
		d.t.Fatalf("step %d: AddWorker(%v): %v, model %v", d.step, w, ea, eb)
	}
}

// predict records a prediction of a prefix of p, in the index (when it is a
// Predictor) and in the model, for 1 to 6 ticks of the clock.
func (d *differential) predict(w flash.Worker, p Prompt) {
	n, ttl := d.src.intn(len(p)+1), time.Duration(d.src.intn(8))
	if ttl == 7 {
		ttl = math.MaxInt64 // past the clock's range: it never ends
	}
	if d.pred == nil {
		return
	}
	q := flash.Query{Locals: p[:n]}
	if d.src.intn(2) == 0 {
		q.Seqs = p[:n].Seq()
	}
	// A new worker takes a slot: ordered with the others' slot changes, as
	// in event.
	if !d.ref.Known(w) {
		d.idx.Flush()
		defer d.idx.Flush()
	}
	ea, eb := d.pred.Predict(w, q, ttl), d.ref.Predict(w, q, ttl)
	if ea != nil && ea != eb {
		d.t.Fatalf("step %d: Predict(%v, %d blocks, %v) = %v, model says %v", d.step, w, n, ttl, ea, eb)
	}
}

func (d *differential) query(p Prompt) {
	q := append(Prompt{}, p...)
	if len(q) > 0 && d.src.intn(3) == 0 {
		q[d.src.intn(len(q))] = alphabet[d.src.intn(len(alphabet))]
	}
	if d.src.intn(3) == 0 {
		q = q[:d.src.intn(len(q)+1)]
	}
	qq := flash.Query{Locals: q}
	if d.src.intn(2) == 0 {
		qq.Seqs = q.Seq()
	}
	d.idx.Flush()
	d.sameMatches(qq)
	if a, b := d.idx.Stats(), d.ref.Stats(); a != b {
		d.t.Fatalf("step %d: stats differ:\n got   %+v\n model %+v", d.step, a, b)
	}
}

// sameMatches asks the index and the model q, and fails unless they
// answer alike; it leaves their answers, sorted, in d.sc and d.rsc.
func (d *differential) sameMatches(q flash.Query) {
	d.idx.FindMatches(q, &d.sc)
	d.ref.FindMatches(q, &d.rsc)
	d.sc.Sort()
	d.rsc.Sort()
	if !slices.Equal(d.sc.Matches, d.rsc.Matches) {
		d.t.Fatalf("step %d: query of %d blocks (seqs=%v):\n got   %v\n model %v", d.step, len(q.Locals), q.Seqs != nil, d.sc.Matches, d.rsc.Matches)
	}
}

// snapshotter is an index that writes and loads snapshots.
type snapshotter interface {
	Dump(w io.Writer, workers ...flash.Worker) (int, error)
	Restore(r io.Reader) error
}

// snapshot dumps the index (when it is a snapshotter), restores the
// snapshot into a new index of the same configuration, and fails unless the
// new one holds what the index holds: every worker's block count, and
// every prompt's matches less their predictions (a snapshot holds none).
func (d *differential) snapshot() {
	src, ok := d.idx.(snapshotter)
	if !ok {
		return
	}
	d.idx.Flush()
	// Every worker, or one of them: a worker last in the snapshot, with
	// nothing after its nodes.
	var only []flash.Worker
	if d.src.intn(2) == 0 {
		only = []flash.Worker{d.workers[d.src.intn(len(d.workers))]}
	}
	dumped := func(w flash.Worker) bool { return only == nil || only[0] == w }
	var b bytes.Buffer
	if _, err := src.Dump(&b, only...); err != nil {
		d.t.Fatalf("step %d: Dump: %v", d.step, err)
	}
	dst := d.f(d.t, d.cfg)
	defer func() { _ = dst.Close() }()
	if err := dst.(snapshotter).Restore(bytes.NewReader(b.Bytes())); err != nil {
		d.t.Fatalf("step %d: Restore of the index's own snapshot: %v", d.step, err)
	}
	if only != nil && d.src.intn(2) == 0 {
		// The worker restored in place from its own snapshot: the same
		// blocks, none of its predictions; the others keep theirs.
		defer func() {
			if err := src.Restore(bytes.NewReader(b.Bytes())); err != nil {
				d.t.Fatalf("step %d: Restore in place of %v: %v", d.step, only[0], err)
			}
			d.ref.DropPredictions(only[0])
			d.query(d.prompts[d.src.intn(len(d.prompts))])
			d.compareCounts()
		}()
	}
	dst.Flush()
	for _, w := range d.workers {
		b := d.ref.BlockCount(w)
		if !dumped(w) {
			b = 0
		}
		if a := dst.BlockCount(w); a != b {
			d.t.Fatalf("step %d: restored BlockCount(%v) = %d, want %d", d.step, w, a, b)
		}
	}
	// The live index and the model answer each query too (their query
	// counters move alike); the restored index answers with the model's
	// matches less their predictions.
	for _, p := range d.prompts {
		q := flash.Query{Locals: p}
		d.sameMatches(q)
		var exact, want flash.Scores
		d.ref.FindExact(q, &exact)
		for _, m := range exact.Matches {
			if dumped(m.Worker) {
				want.Matches = append(want.Matches, m)
			}
		}
		want.Sort()
		dst.FindMatches(q, &d.sc)
		d.sc.Sort()
		if !slices.Equal(d.sc.Matches, want.Matches) {
			d.t.Fatalf("step %d: restored index, query of %d blocks:\n got   %v\n want  %v", d.step, len(p), d.sc.Matches, want.Matches)
		}
	}
}

func (d *differential) compareCounts() {
	d.idx.Flush()
	for _, w := range d.workers {
		if a, b := d.idx.BlockCount(w), d.ref.BlockCount(w); a != b {
			d.t.Fatalf("BlockCount(%v) = %d, model %d", w, a, b)
		}
	}
}

// RandomDifferential applies n seeded random events and queries to an index
// made by f and to the model, comparing every answer, the counters and the
// block counts.
func RandomDifferential(t *testing.T, f Factory, seed uint64, n int) {
	seeded(t, f, "", seed, n, narrow)
}

// RandomDifferentialWide is RandomDifferential with 60 more workers, each
// holding a block or three, seen first: the random workers' slots are 60
// to 68, so their sets are wider than a word (arena entries) and their
// bits lie on both sides of its end.
func RandomDifferentialWide(t *testing.T, f Factory, seed uint64, n int) {
	seeded(t, f, "wide/", seed, n, wide)
}

// RandomDifferentialWider is RandomDifferential over sets of three words:
// 124 fillers, of which the last 64 are then removed, so that the random
// workers take slots 60 to 71 in sets of 133, and entries change between
// their inline and arena forms as workers past slot 62 join and leave
// them.
func RandomDifferentialWider(t *testing.T, f Factory, seed uint64, n int) {
	seeded(t, f, "wider/", seed, n, wider)
}

// RandomDifferentialTiers is RandomDifferential over three tiers: every
// Stored and Removed event names a tier, Cleared events one tier or all.
// Odd seeds run the random workers alone; even ones after 18 fillers, so
// that a worker's places straddle the end of a set's first word.
func RandomDifferentialTiers(t *testing.T, f Factory, seed uint64, n int) {
	if seed%2 == 0 {
		seeded(t, f, "tiers-straddling/", seed, n, tieredPlanes)
		return
	}
	seeded(t, f, "tiers/", seed, n, tiered)
}

// RandomDifferentialBusy is RandomDifferential over 150 prompts instead of
// 10: positions hold dozens of entries, so the shared tables grow, shrink
// and are replaced and reused as the random workers store and leave.
func RandomDifferentialBusy(t *testing.T, f Factory, seed uint64, n int) {
	seeded(t, f, "busy/", seed, n, busy)
}

// seeded runs n seeded random operations over lay as the subtest
// prefix+"seed=<seed>".
func seeded(t *testing.T, f Factory, prefix string, seed uint64, n int, lay layout) {
	t.Run(fmt.Sprintf("%sseed=%d", prefix, seed), func(t *testing.T) {
		src := randSource{rand.New(rand.NewPCG(seed, seed*7+1))}
		newDifferential(t, f, src, seed, lay).run(n)
	})
}

// FuzzOps decodes data into events and queries, applies them to an index made
// by f and to the model, and fails on the first difference. Call it from a
// fuzz target:
//
//	func FuzzConformance(f *testing.F) {
//		f.Add([]byte{...})
//		f.Fuzz(func(t *testing.T, data []byte) { flashtest.FuzzOps(t, factory, data) })
//	}
func FuzzOps(t *testing.T, f Factory, data []byte) {
	// Long inputs are cut to a few thousand operations: every query compares
	// with the model, and one slow input would stall the fuzzer.
	newDifferential(t, f, &byteSource{b: data[:min(len(data), 16384)]}, 1, narrow).run(4000)
}

// FuzzOpsWide is FuzzOps over wide worker sets, as RandomDifferentialWide:
// 60 filler workers first, so that the decoded workers take slots 60–68,
// on both sides of the first word's (or plane's) end.
func FuzzOpsWide(t *testing.T, f Factory, data []byte) {
	newDifferential(t, f, &byteSource{b: data[:min(len(data), 16384)]}, 1, wide).run(4000)
}

// FuzzOpsTiers is FuzzOps over three tiers, as RandomDifferentialTiers.
func FuzzOpsTiers(t *testing.T, f Factory, data []byte) {
	newDifferential(t, f, &byteSource{b: data[:min(len(data), 16384)]}, 1, tiered).run(4000)
}

// FuzzOpsWider is FuzzOps over sets of three words, as
// RandomDifferentialWider.
func FuzzOpsWider(t *testing.T, f Factory, data []byte) {
	newDifferential(t, f, &byteSource{b: data[:min(len(data), 16384)]}, 1, wider).run(4000)
}
