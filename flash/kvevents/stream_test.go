package kvevents

import (
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/kvevents/kvtest"
)

// run is a recorded engine run: payloads by sequence number and, for each,
// the flash events the router should apply.
type run struct {
	payloads [][]byte
	want     [][]flash.Event
}

const streamWorker = 77

var streamRanks = []flash.Worker{{ID: streamWorker, DPRank: 0}, {ID: streamWorker, DPRank: 1}}

// record generates n batches alternating DP ranks 0 and 1, as one engine
// with two ranks sharing a publisher.
func record(wl *workload, engines []*engine, n int) *run {
	r := &run{}
	for i := 0; i < n; i++ {
		rank := i % 2
		w := streamRanks[rank]
		var wire []any
		var want []flash.Event
		for k := 0; k <= i%3; k++ {
			a, b := engines[rank].event(w)
			wire, want = append(wire, a), append(want, b)
		}
		r.payloads = append(r.payloads, kvtest.Encode(float64(i), wire, rank, false))
		r.want = append(r.want, want)
	}
	return r
}

type streamFixture struct {
	t      *testing.T
	wl     *workload
	ix     *flash.Indexer
	m      flash.Index
	s      *stream
	c      counters
	resync []Resync
}

func newStreamFixture(t *testing.T, withReplay bool, replayFrom *int, r **run) *streamFixture {
	f := &streamFixture{t: t, ix: flash.New(flash.WithWriters(0), flash.WithBlockSize(testBlock)), m: newModel()}
	f.s = &stream{
		ep: Endpoint{Addr: "test"}, worker: streamWorker, ix: f.ix, c: &f.c,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), tr: NewTranslator(testBlock),
		onResync: func(rs Resync) { f.resync = append(f.resync, rs) },
	}
	if withReplay {
		f.s.replay = func(from uint64, each func(uint64, []byte) bool) error {
			for seq := max(int(from), *replayFrom); seq < len((*r).payloads); seq++ {
				if !each(uint64(seq), (*r).payloads[seq]) {
					return nil
				}
			}
			return nil
		}
	}
	return f
}

// deliver hands the stream live batch seq of r.
func (f *streamFixture) deliver(r *run, seq int) { f.s.receive(uint64(seq), r.payloads[seq]) }

// expect applies batches [from, to) of r to the model.
func (f *streamFixture) expect(r *run, from, to int) {
	for _, evs := range r.want[from:to] {
		for _, ev := range evs {
			_ = f.m.Apply(ev)
		}
	}
}

// loseBatches10to12 delivers batches 0..9 and 13..29 of r, and tells the
// model that the workers are cleared after batch 9 and that the batches from
// resume on apply (13 without a replay; earlier when the replay still holds
// some).
func (f *streamFixture) loseBatches10to12(r *run, resume int) {
	for seq := 0; seq < 30; seq++ {
		if seq < 10 || seq >= 13 {
			f.deliver(r, seq)
		}
	}
	f.expect(r, 0, 10)
	f.expectClear()
	f.expect(r, resume, 30)
}

func (f *streamFixture) expectClear() {
	for _, w := range streamRanks {
		_ = f.m.Apply(flash.ClearedEvent(w))
	}
}

func (f *streamFixture) check(what string) {
	f.t.Helper()
	if msg := compare(f.ix, f.m, f.wl, streamRanks); msg != "" {
		f.t.Fatalf("%s: %s", what, msg)
	}
	if matched(f.m, f.wl) == 0 {
		f.t.Fatalf("%s: no prompt matches: the comparison shows nothing", what)
	}
}

func setup(t *testing.T, withReplay bool, n int) (*streamFixture, *run, *int) {
	rng := rand.New(rand.NewPCG(1, 2))
	wl := newWorkload(rng, 30)
	r := record(wl, []*engine{newEngine(wl, 1), newEngine(wl, 2)}, n)
	replayFrom := new(int)
	f := newStreamFixture(t, withReplay, replayFrom, &r)
	f.wl = wl
	return f, r, replayFrom
}

func TestStream_GapReplayed(t *testing.T) {
	f, r, _ := setup(t, true, 30)
	for seq := 0; seq < 10; seq++ {
		f.deliver(r, seq)
	}
	f.deliver(r, 13)                 // 10..12 lost: the replay brings 10..29
	for seq := 14; seq < 30; seq++ { // 13..29 are duplicates now
		f.deliver(r, seq) // already applied from the replay
	}
	f.expect(r, 0, 30)
	f.check("after a replayed gap")
	st := f.c.snapshot()
	if st.Gaps != 1 || st.Replays != 1 || st.ReplayedBatches != 20 || st.Duplicates != 17 || st.Resyncs != 0 || st.Batches != 30 {
		t.Fatalf("stats %+v", st)
	}
}

func TestStream_GapWithoutReplayClears(t *testing.T) {
	f, r, _ := setup(t, false, 30)
	f.loseBatches10to12(r, 13)
	f.check("after an unrecovered gap")
	st := f.c.snapshot()
	if st.Gaps != 1 || st.Resyncs != 1 || st.Replays != 0 || st.Batches != 27 {
		t.Fatalf("stats %+v", st)
	}
	if len(f.resync) != 1 || f.resync[0].Reason != ResyncGap || f.resync[0].From != 10 || f.resync[0].To != 13 || len(f.resync[0].Cleared) != 2 {
		t.Fatalf("resyncs %+v", f.resync)
	}
}

// A replay that no longer reaches back to the first lost batch: the
// workers are cleared (what the lost batch did is unknown) and the batches
// it still holds apply from there.
func TestStream_ReplayTooShortClears(t *testing.T) {
	f, r, from := setup(t, true, 30)
	*from = 11 // the engine no longer holds batch 10
	f.loseBatches10to12(r, 11)
	f.check("after a replay that came back short")
	if st := f.c.snapshot(); st.ReplayFailures != 1 || st.Resyncs != 1 || st.ReplayedBatches != 19 || st.Duplicates != 17 {
		t.Fatalf("stats %+v", st)
	}
	if len(f.resync) != 1 || f.resync[0].Reason != ResyncGap || f.resync[0].From != 10 || f.resync[0].To != 11 {
		t.Fatalf("resyncs %+v", f.resync)
	}
}

// On its first connection the subscriber takes what the replay socket
// holds, before any live batch: all of it from 0, or from where it starts.
func TestStream_CatchUp(t *testing.T) {
	f, r, _ := setup(t, true, 20)
	f.s.catchUp()
	f.expect(r, 0, 20)
	f.check("caught up from 0")
	for seq := 15; seq < 20; seq++ {
		f.deliver(r, seq) // live batches that were replayed already
	}
	f.check("after duplicates")
	if st := f.c.snapshot(); st.Replays != 1 || st.ReplayedBatches != 20 || st.Duplicates != 5 || st.Restarts != 0 || st.Resyncs != 0 {
		t.Fatalf("stats %+v", st)
	}

	f, r, from := setup(t, true, 20)
	*from = 8 // history from batch 8 on
	f.s.catchUp()
	f.expect(r, 8, 20)
	f.check("caught up from 8")
	if len(f.resync) != 1 || f.resync[0].Reason != ResyncLateJoin || f.resync[0].From != 0 || f.resync[0].To != 8 {
		t.Fatalf("resyncs %+v", f.resync)
	}
	// No replay socket to ask: nothing happens until a live batch.
	f, _, _ = setup(t, false, 5)
	f.s.catchUp()
	if f.s.started || f.c.snapshot() != (Stats{}) {
		t.Fatalf("catch-up without replay: started %v, %+v", f.s.started, f.c.snapshot())
	}
}

func TestStream_Restart(t *testing.T) {
	f, r, _ := setup(t, false, 40)
	for seq := 0; seq < 25; seq++ {
		f.deliver(r, seq)
	}
	// The engine restarts: a new run numbered from 0 (here batches 25..39
	// of the recording, renumbered).
	second := &run{payloads: r.payloads[25:], want: r.want[25:]}
	for seq := 0; seq < 15; seq++ {
		f.deliver(second, seq)
	}
	f.expect(r, 0, 25)
	f.expectClear()
	f.expect(second, 0, 15)
	f.check("after a restart")
	st := f.c.snapshot()
	if st.Restarts != 1 || st.Gaps != 0 || st.Resyncs != 0 || st.Batches != 40 {
		t.Fatalf("stats %+v", st)
	}
	if len(f.resync) != 1 || f.resync[0].Reason != ResyncRestart {
		t.Fatalf("resyncs %+v", f.resync)
	}
}

func TestStream_LateJoin(t *testing.T) {
	// With a replay socket holding everything, a late subscriber catches up.
	f, r, _ := setup(t, true, 20)
	for seq := 6; seq < 20; seq++ {
		f.deliver(r, seq)
	}
	f.expect(r, 0, 20)
	f.check("late join, replayed")
	if st := f.c.snapshot(); st.LateJoins != 1 || st.Replays != 1 || st.Resyncs != 0 {
		t.Fatalf("stats %+v", st)
	}
	// Without one, it starts from what it sees and says so.
	f, r, _ = setup(t, false, 20)
	for seq := 6; seq < 20; seq++ {
		f.deliver(r, seq)
	}
	f.expect(r, 6, 20)
	f.check("late join, not replayed")
	if len(f.resync) != 1 || f.resync[0].Reason != ResyncLateJoin || f.resync[0].From != 0 || f.resync[0].To != 6 {
		t.Fatalf("resyncs %+v", f.resync)
	}
}

func TestStream_BadInputSkipped(t *testing.T) {
	f, r, _ := setup(t, false, 10)
	for seq := 0; seq < 5; seq++ {
		f.deliver(r, seq)
	}
	f.s.receive(5, []byte{0x92, 0x01}) // malformed: dropped, counted
	bad := kvtest.Encode(0, []any{
		kvtest.Stored([]uint64{1}, nil, tokensOf(3, 0), testBlock),             // 3 tokens for a block of 4
		kvtest.Stored([]uint64{1}, nil, tokensOf(8, 0), 8),                     // another block size
		kvtest.Stored([]uint64{1}, nil, tokensOf(4, 0), testBlock, nil, "CPU"), // another medium
		kvtest.Removed([]uint64{1}, "disk"),
		[]any{"BlockMoved", 1},
	}, 0, false)
	f.s.receive(6, bad)
	shifted := &run{payloads: append(make([][]byte, 7), r.payloads[5:]...)}
	for seq := 7; seq < 12; seq++ {
		f.deliver(shifted, seq)
	}
	f.expect(r, 0, 10)
	f.check("after bad input")
	st := f.c.snapshot()
	if st.Malformed != 1 || st.BadEvents != 2 || st.UnknownMedium != 2 || st.UnknownEvents != 1 || st.Gaps != 0 || st.Resyncs != 0 {
		t.Fatalf("stats %+v", st)
	}
}
