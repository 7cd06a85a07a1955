package scaleout

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
	"github.com/flashindexer/flashindexer/flash/scaleout/natstest"
)

// workload is a replay of stores and removals (mid-chain ones too) over
// prompts sharing prefixes, by eight workers, each worker's events
// numbered from 0, and the queries that check an index.
type workload struct {
	events  []flash.Event
	queries []flash.Query
}

func newWorkload(n int) workload {
	r := rand.New(rand.NewPCG(7, 8))
	base := flashtest.Seqs(1, 24)
	prompts := flashtest.Variants(base, 12, 6, 1, 100)
	var wl workload
	ids := map[flash.Worker]uint64{}
	for range n {
		w := flash.Worker{ID: uint64(r.IntN(8))}
		p := prompts[r.IntN(len(prompts))]
		var ev flash.Event
		if r.IntN(4) == 0 {
			ev = flash.RemovedEvent(w, p.Hash(r.IntN(len(p)), 0))
		} else {
			ev = p.StoreEvent(w, 0, 1+r.IntN(len(p)), 0)
		}
		ev.ID = ids[w]
		ids[w]++
		wl.events = append(wl.events, ev)
	}
	for _, p := range prompts {
		wl.queries = append(wl.queries, flash.Query{Locals: p})
	}
	return wl
}

// traceWorkload replays the first n requests of the Mooncake conversation
// trace (bench/trace's copy): request i goes to worker i mod 16, which
// stores the blocks it lacks (one per trace hash id) under the last one it
// holds, and evicts random blocks, mid-chain ones too, past 2,048. The
// queries are the requests' prompts.
func traceWorkload(t testing.TB, n int) workload {
	f, err := os.Open("../../bench/trace/data/conversation_trace.jsonl.gz")
	if err != nil {
		t.Skipf("the trace: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	const workers, capacity = 16, 2048
	type cache struct {
		held map[flash.ExternalHash]bool
		list []flash.ExternalHash
	}
	caches := make([]cache, workers)
	for i := range caches {
		caches[i].held = map[flash.ExternalHash]bool{}
	}
	r := rand.New(rand.NewPCG(3, 4))
	var wl workload
	ids := map[flash.Worker]uint64{}
	emit := func(ev flash.Event) {
		ev.ID = ids[ev.Worker]
		ids[ev.Worker]++
		wl.events = append(wl.events, ev)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for i := 0; i < n && sc.Scan(); i++ {
		var req struct {
			HashIDs []uint64 `json:"hash_ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			t.Fatal(err)
		}
		locals := make([]flash.LocalHash, len(req.HashIDs))
		for j, id := range req.HashIDs {
			locals[j] = flash.LocalHash(id*0x9E3779B97F4A7C15 + 1)
		}
		seqs := flash.ChainLocals(nil, locals)
		wl.queries = append(wl.queries, flash.Query{Locals: locals})
		w := flash.Worker{ID: uint64(i % workers)}
		c := &caches[w.ID]
		have := 0
		for have < len(seqs) && c.held[flash.ExternalHash(seqs[have])] {
			have++
		}
		if have == len(seqs) {
			continue
		}
		var blocks []flash.Block
		for j := have; j < len(seqs); j++ {
			h := flash.ExternalHash(seqs[j])
			blocks = append(blocks, flash.Block{Hash: h, Local: locals[j]})
			c.held[h] = true
			c.list = append(c.list, h)
		}
		ev := flash.StoredEvent(w, blocks...)
		if have > 0 {
			ev = ev.WithParent(flash.ExternalHash(seqs[have-1]))
		}
		emit(ev)
		var gone []flash.ExternalHash
		for len(c.list) > capacity {
			k := r.IntN(len(c.list))
			h := c.list[k]
			c.list[k] = c.list[len(c.list)-1]
			c.list = c.list[:len(c.list)-1]
			delete(c.held, h)
			gone = append(gone, h)
		}
		if len(gone) > 0 {
			emit(flash.RemovedEvent(w, gone...))
		}
	}
	return wl
}

// direct is an index fed the events themselves.
func (wl workload) direct(t *testing.T) *flash.Indexer {
	ix := flash.New(flash.WithWriters(0))
	t.Cleanup(func() { _ = ix.Close() })
	for _, ev := range wl.events {
		_ = ix.Apply(ev)
	}
	return ix
}

// differences counts the queries ix answers unlike want.
func (wl workload) differences(ix, want flash.Index) int {
	ix.Flush()
	diff := 0
	var a, b flash.Scores
	for _, q := range wl.queries {
		ix.FindMatches(q, &a)
		want.FindMatches(q, &b)
		a.Sort()
		b.Sort()
		if !slices.Equal(a.Matches, b.Matches) {
			diff++
		}
	}
	return diff
}

// publish publishes evs through r, evs[i] with message ID from+i, trying
// each again until the stream acknowledges it.
//
// Each try has a deadline of its own: a message sent to a node as it stops
// gets no reply, and its request would otherwise wait out the whole
// budget. The message ID makes a try that did land harmless to repeat.
func publish(t *testing.T, r *Relay, evs []flash.Event, from int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range evs {
		for {
			try, stop := context.WithTimeout(ctx, 2*time.Second)
			_, err := r.Publish(try, MsgID("engine-a", uint64(from+i), 0), &evs[i])
			stop()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("publishing event %d: %v", from+i, err)
			}
			time.Sleep(20 * time.Millisecond) // the server is restarting
		}
	}
}

func waitCaughtUp(t *testing.T, reps ...*Replica) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, r := range reps {
		for {
			ok, err := r.CaughtUp(context.Background())
			if err == nil && ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a replica stopped at %d: %v", r.Applied(), err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func runReplica(t testing.TB, r *Replica) context.CancelFunc {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return cancel
}

func newStream(t testing.TB, js jetstream.JetStream, cfg jetstream.StreamConfig) {
	t.Helper()
	if _, err := EnsureStream(context.Background(), js, cfg); err != nil {
		t.Fatal(err)
	}
}

// Three replicas fed from one stream answer every query exactly as one
// index fed the events directly.
func TestReplicas_AgreeWithDirect(t *testing.T) {
	s := natstest.Server(t, t.TempDir(), -1)
	js := natstest.Connect(t, s.ClientURL())
	newStream(t, js, StreamConfig("KV", "kv", 0, 0))
	wl := traceWorkload(t, 3000)
	stored, removed := 0, 0
	for _, ev := range wl.events {
		stored, removed = stored+len(ev.Blocks), removed+len(ev.Hashes)
	}
	t.Logf("%d events of the trace's first 3,000 requests: %d blocks stored, %d evicted", len(wl.events), stored, removed)
	var reps []*Replica
	for range 3 {
		ix := flash.New(flash.WithWriters(1))
		t.Cleanup(func() { _ = ix.Close() })
		r := NewReplica(js, "KV", ix)
		runReplica(t, r)
		reps = append(reps, r)
	}
	publish(t, NewRelay(js, "kv"), wl.events, 0)
	waitCaughtUp(t, reps...)
	direct := wl.direct(t)
	for i, r := range reps {
		if d := wl.differences(r.idx, direct); d != 0 || r.Malformed() != 0 {
			t.Errorf("replica %d: %d of %d queries differ, %d malformed", i, d, len(wl.queries), r.Malformed())
		}
	}
}

// A replica stopped mid-stream and a new one started from its snapshot
// catch up with the stream and answer like the direct index.
func TestReplica_RestartFromSnapshot(t *testing.T) {
	s := natstest.Server(t, t.TempDir(), -1)
	ctx := context.Background()
	js := natstest.Connect(t, s.ClientURL())
	newStream(t, js, StreamConfig("KV", "kv", 0, 0))
	store, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "snapshots", Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	wl := traceWorkload(t, 3000)
	half := len(wl.events) / 2
	relay := NewRelay(js, "kv")
	first := flash.New(flash.WithWriters(1))
	defer first.Close()
	a := NewReplica(js, "KV", first)
	stop := runReplica(t, a)
	publish(t, relay, wl.events[:half], 0)
	waitCaughtUp(t, a)
	// Snapshots on a schedule: the first one taken covers the first half.
	sctx, sstop := context.WithCancel(ctx)
	taken := make(chan uint64, 1)
	go a.SnapshotEvery(sctx, store, 10*time.Millisecond, func(seq uint64, err error) {
		if err == nil {
			select {
			case taken <- seq:
			default:
			}
		}
	})
	seq := <-taken
	sstop()
	if seq != uint64(half) {
		t.Fatalf("snapshot at %d, want %d", seq, half)
	}
	stop()
	publish(t, relay, wl.events[half:], half)

	second := flash.New(flash.WithWriters(1))
	defer second.Close()
	b := NewReplica(js, "KV", second)
	start := time.Now()
	if err := b.Restore(ctx, store); err != nil {
		t.Fatal(err)
	}
	runReplica(t, b)
	waitCaughtUp(t, b)
	t.Logf("caught up in %v from the snapshot at %d to %d", time.Since(start), seq, b.Applied())
	if d := wl.differences(second, wl.direct(t)); d != 0 {
		t.Fatalf("%d of %d queries differ", d, len(wl.queries))
	}
}

// The NATS server restarted mid-stream (file storage), and a relay that
// publishes again from earlier after its own restart: no event is lost,
// none applied twice, which the index's event ids show.
func TestReplica_ServerRestart(t *testing.T) {
	dir := t.TempDir()
	s := natstest.Server(t, dir, -1)
	url, port := s.ClientURL(), s.Addr().(*net.TCPAddr).Port
	js := natstest.Connect(t, url)
	newStream(t, js, StreamConfig("KV", "kv", 0, time.Hour))
	run := newWorkload(2000).startExactlyOnce(t, js)
	s.Shutdown()
	s.WaitForShutdown()
	natstest.Server(t, dir, port)                   // again, on the same port and files
	publish(t, run.relay, run.wl.events[800:], 800) // the relay restarted at 800: 200 duplicates
	run.check(t)
}

// exactlyOnceRun is a replica fed through a relay, whose index counts the
// event-id gaps and restarts it sees (reported).
type exactlyOnceRun struct {
	wl       workload
	ix       *flash.Indexer
	r        *Replica
	relay    *Relay
	reported atomic.Int64
}

// startExactlyOnce runs a replica of stream KV and publishes the first
// 1,000 events of wl, until the replica has applied them.
func (wl workload) startExactlyOnce(t *testing.T, js jetstream.JetStream) *exactlyOnceRun {
	run := &exactlyOnceRun{wl: wl}
	run.ix = flash.New(flash.WithWriters(1), flash.WithEventIDs(func(flash.Worker, uint64, uint64) { run.reported.Add(1) }))
	t.Cleanup(func() { _ = run.ix.Close() })
	run.r = NewReplica(js, "KV", run.ix)
	runReplica(t, run.r)
	run.relay = NewRelay(js, "kv")
	publish(t, run.relay, wl.events[:1000], 0)
	waitCaughtUp(t, run.r)
	return run
}

// check waits for the replica to catch up, then checks that it applied
// every event of wl once: as many messages as events, no gap nor restart
// in the index's event ids, every query as the direct index answers it.
func (run *exactlyOnceRun) check(t *testing.T) {
	t.Helper()
	waitCaughtUp(t, run.r)
	wl, ix, r := run.wl, run.ix, run.r
	ix.Flush()
	st := ix.Stats()
	if r.Applied() != uint64(len(wl.events)) || st.EventGaps != 0 || st.EventRestarts != 0 || run.reported.Load() != 0 {
		t.Fatalf("applied %d of %d; gaps %d, restarts %d", r.Applied(), len(wl.events), st.EventGaps, st.EventRestarts)
	}
	if d := wl.differences(ix, wl.direct(t)); d != 0 {
		t.Fatalf("%d of %d queries differ", d, len(wl.queries))
	}
}

// A snapshot older than what the stream keeps is refused with
// ErrSnapshotTooOld, and the index is left alone.
func TestReplica_SnapshotTooOld(t *testing.T) {
	s := natstest.Server(t, t.TempDir(), -1)
	ctx := context.Background()
	js := natstest.Connect(t, s.ClientURL())
	cfg := StreamConfig("KV", "kv", 0, 0)
	cfg.MaxMsgs = 100
	newStream(t, js, cfg)
	wl := newWorkload(400)
	store, relay := snapshotAfter(t, js, wl.events[:50])
	publish(t, relay, wl.events[50:], 50)
	fresh := flash.New(flash.WithWriters(0))
	defer fresh.Close()
	if err := NewReplica(js, "KV", fresh).Restore(ctx, store); !errors.Is(err, ErrSnapshotTooOld) {
		t.Fatalf("Restore = %v, want ErrSnapshotTooOld", err)
	}
	if fresh.Workers() != 0 {
		t.Fatal("a refused snapshot changed the index")
	}
}

func TestCodec_RoundTrip(t *testing.T) {
	wl := newWorkload(200)
	evs := append(wl.events, flash.ClearedEvent(flash.Worker{ID: 3, DPRank: 2}).WithID(9), wl.events[1].WithParent(77),
		wl.events[2].InTier(1), flash.ClearedEvent(flash.Worker{ID: 4}).InTier(0), flash.RemovedEvent(flash.Worker{ID: 5}, 8, 9).InTier(3))
	var buf []byte
	var got flash.Event
	for i, ev := range evs {
		buf = AppendEvent(buf[:0], &ev)
		if err := DecodeEvent(buf, &got); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(ev) {
			t.Fatalf("event %d: got %+v, want %+v", i, got, ev)
		}
		for cut := range len(buf) {
			if DecodeEvent(buf[:cut], &got) == nil {
				t.Fatalf("event %d cut to %d bytes decoded", i, cut)
			}
		}
	}
}

func FuzzDecodeEvent(f *testing.F) {
	ev := flashtest.Seqs(1, 3).StoreEvent(flash.Worker{ID: 1}, 0, 3, 0).WithParent(5)
	f.Add(AppendEvent(nil, &ev))
	ev = ev.InTier(2)
	f.Add(AppendEvent(nil, &ev))
	f.Fuzz(func(t *testing.T, b []byte) {
		var ev flash.Event
		if DecodeEvent(b, &ev) != nil {
			return
		}
		if again := AppendEvent(nil, &ev); string(again) != string(b) {
			t.Fatalf("decoded %+v, which encodes to %x, not %x", ev, again, b)
		}
	})
}

func TestCodec_Batch(t *testing.T) {
	wl := newWorkload(100)
	buf := AppendBatch(nil, wl.events[:40])
	var got []string
	var ev flash.Event
	if err := DecodeBatch(buf, &ev, func(e *flash.Event) { got = append(got, fmt.Sprint(*e)) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 40 {
		t.Fatalf("%d events, want 40", len(got))
	}
	for i, g := range got {
		if g != fmt.Sprint(wl.events[i]) {
			t.Fatalf("event %d: %s, want %v", i, g, wl.events[i])
		}
	}
	for cut := range len(buf) {
		calls := 0
		if DecodeBatch(buf[:cut], &ev, func(*flash.Event) { calls++ }) == nil || calls != 0 {
			t.Fatalf("a batch cut to %d bytes decoded (%d events applied)", cut, calls)
		}
	}
}

func FuzzDecodeBatch(f *testing.F) {
	wl := newWorkload(5)
	f.Add(AppendBatch(nil, wl.events))
	f.Fuzz(func(t *testing.T, b []byte) {
		var evs []flash.Event
		var ev flash.Event
		if DecodeBatch(b, &ev, func(e *flash.Event) {
			c := *e
			c.Blocks, c.Hashes = slices.Clone(e.Blocks), slices.Clone(e.Hashes)
			evs = append(evs, c)
		}) != nil {
			if len(evs) != 0 {
				t.Fatal("a refused batch applied events")
			}
			return
		}
		var again []byte
		if len(b) > 0 && (b[0] == codecVersion || b[0] == tieredVersion) {
			again = AppendEvent(nil, &evs[0])
		} else {
			again = AppendBatch(nil, evs)
		}
		if string(again) != string(b) {
			t.Fatalf("decoded %d events that encode to %x, not %x", len(evs), again, b)
		}
	})
}

// A snapshot of a stream that was deleted and created again under its name
// is refused with ErrSnapshotOtherStream, and one past the stream's last
// message with ErrSnapshotAhead; the index is left alone. A replica once
// loaded such a snapshot, skipped the new stream's first messages and
// reported itself caught up.
func TestReplica_SnapshotOfAnotherStream(t *testing.T) {
	s := natstest.Server(t, t.TempDir(), -1)
	ctx := context.Background()
	js := natstest.Connect(t, s.ClientURL())
	newStream(t, js, StreamConfig("KV", "kv", 0, 0))
	wl := newWorkload(40)
	store, _ := snapshotAfter(t, js, wl.events[:10])

	// The stream, deleted and created again, holds 6 new messages.
	if err := js.DeleteStream(ctx, "KV"); err != nil {
		t.Fatal(err)
	}
	newStream(t, js, StreamConfig("KV", "kv", 0, 0))
	publish(t, NewRelay(js, "kv"), wl.events[10:16], 0)
	fresh := flash.New(flash.WithWriters(0))
	defer fresh.Close()
	b := NewReplica(js, "KV", fresh)
	if err := b.Restore(ctx, store); !errors.Is(err, ErrSnapshotOtherStream) {
		t.Fatalf("Restore of the old stream's snapshot = %v, want ErrSnapshotOtherStream", err)
	}
	if fresh.Workers() != 0 || b.Applied() != 0 {
		t.Fatalf("a refused snapshot changed the replica: %d workers, applied %d", fresh.Workers(), b.Applied())
	}

	// A snapshot naming this stream but past its end.
	if _, err := b.Snapshot(ctx, store); err != nil {
		t.Fatal(err)
	}
	obj, err := store.GetInfo(ctx, snapshotName)
	if err != nil {
		t.Fatal(err)
	}
	obj.Metadata[seqKey] = "10"
	if err := store.UpdateMeta(ctx, snapshotName, obj.ObjectMeta); err != nil {
		t.Fatal(err)
	}
	if err := NewReplica(js, "KV", fresh).Restore(ctx, store); !errors.Is(err, ErrSnapshotAhead) {
		t.Fatalf("Restore of a snapshot past the stream's end = %v, want ErrSnapshotAhead", err)
	}
	if fresh.Workers() != 0 {
		t.Fatal("a refused snapshot changed the index")
	}
}

// snapshotAfter runs a replica of stream KV while evs are published
// through a relay on subject kv, takes its snapshot into a new bucket
// "snapshots" once it has applied them, and stops it; it returns the
// bucket and the relay.
func snapshotAfter(t *testing.T, js jetstream.JetStream, evs []flash.Event) (jetstream.ObjectStore, *Relay) {
	t.Helper()
	ctx := context.Background()
	store, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "snapshots"})
	if err != nil {
		t.Fatal(err)
	}
	relay := NewRelay(js, "kv")
	ix := flash.New(flash.WithWriters(0))
	t.Cleanup(func() { _ = ix.Close() })
	r := NewReplica(js, "KV", ix)
	stop := runReplica(t, r)
	publish(t, relay, evs, 0)
	waitCaughtUp(t, r)
	if seq, err := r.Snapshot(ctx, store); err != nil || seq != uint64(len(evs)) {
		t.Fatalf("Snapshot = %d, %v; want %d", seq, err, len(evs))
	}
	stop()
	return store, relay
}

// An event of the fastest tier keeps the form replicas from before tiers
// read; a tiered event has its own, which names a tier there is and is
// never the first form's event in disguise.
func TestCodec_Tiers(t *testing.T) {
	ev := flashtest.Seqs(1, 2).StoreEvent(flash.Worker{ID: 1}, 0, 2, 0)
	if b := AppendEvent(nil, &ev); b[0] != codecVersion {
		t.Fatalf("a GPU event in form %d", b[0])
	}
	cpu := ev.InTier(1)
	b := AppendEvent(nil, &cpu)
	var got flash.Event
	if b[0] != tieredVersion || DecodeEvent(b, &got) != nil || got.Tier != 1 || !got.TierOnly {
		t.Fatalf("form %d decoded %+v", b[0], got)
	}
	for _, tier := range []byte{0, flash.MaxTiers, tierOnlyBit | flash.MaxTiers} {
		bad := AppendEvent(nil, &cpu)
		bad[tierByte(bad)] = tier
		if DecodeEvent(bad, &got) == nil {
			t.Fatalf("tier byte %#x decoded", tier)
		}
	}
}

// tierByte returns where a tiered event without a parent keeps its tier.
func tierByte(b []byte) int {
	d := decoder{b: b[2:]}
	d.uvarint()
	d.uvarint()
	d.uvarint()
	return len(b) - len(d.b) + 1
}
