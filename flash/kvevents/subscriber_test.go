package kvevents

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/kvevents/kvtest"
)

// source is one test publisher, its endpoint and its engines (one per DP
// rank it publishes for).
type source struct {
	pub     *kvtest.Publisher
	ep      Endpoint
	workers []flash.Worker
	engines []*engine
	rank    func(i int) (rank any, omit bool)
	sent    int
}

// batch builds the next batch of s: its payload and the events the model
// should see.
func (s *source) batch() (payload []byte, rank int, want []flash.Event) {
	i := s.sent
	s.sent++
	rank = i % len(s.workers)
	var wire []any
	for k := 0; k <= i%3; k++ {
		a, b := s.engines[rank].event(s.workers[rank])
		wire, want = append(wire, a), append(want, b)
	}
	r, omit := s.rank(rank)
	return kvtest.Encode(float64(i), wire, r, omit), rank, want
}

type loopback struct {
	t   *testing.T
	wl  *workload
	ix  *flash.Indexer
	m   flash.Index
	sub *Subscriber

	mu      sync.Mutex
	resyncs []Resync
}

func (lb *loopback) all(srcs ...*source) []flash.Worker {
	var ws []flash.Worker
	for _, s := range srcs {
		ws = append(ws, s.workers...)
	}
	return ws
}

// send publishes n batches of s (dropping those in drop) and feeds the
// model what the subscriber should apply.
func (lb *loopback) send(s *source, n int, drop map[int]bool, recovered bool) {
	lb.t.Helper()
	for k := 0; k < n; k++ {
		payload, _, want := s.batch()
		var err error
		if drop[k] {
			_, err = s.pub.Drop(payload)
			if !recovered {
				for _, w := range s.workers {
					_ = lb.m.Apply(flash.ClearedEvent(w))
				}
				continue
			}
		} else {
			_, err = s.pub.Send(payload)
		}
		if err != nil {
			lb.t.Fatal(err)
		}
		for _, ev := range want {
			_ = lb.m.Apply(ev)
		}
	}
}

func (lb *loopback) converge(what string, srcs ...*source) {
	lb.t.Helper()
	ws := lb.all(srcs...)
	polls := 0
	eventually(lb.t, 20*time.Second, what, func() string {
		lb.ix.Flush()
		msg := compare(lb.ix, lb.m, lb.wl, ws)
		if msg != "" {
			// What the subscriber saw, for a failure's message: a loss the
			// model was not told of shows as an extra resync.
			lb.mu.Lock()
			msg += fmt.Sprintf("; subscriber %+v; resyncs %+v", lb.sub.Stats(), lb.resyncs)
			lb.mu.Unlock()
		}
		polls++
		if msg != "" && polls%4 == 3 {
			// A publisher's first batches can go before the subscription
			// is in, and then nothing shows the loss: as a serving engine
			// does, keep publishing (empty batches), so the subscriber
			// sees the sequence and fills in from the replay socket.
			for _, s := range srcs {
				if _, err := s.pub.Send(kvtest.Encode(0, []any{}, nil, true)); err != nil {
					return err.Error()
				}
			}
		}
		return msg
	})
	if matched(lb.m, lb.wl) == 0 {
		lb.t.Fatalf("%s: no prompt matches: the comparison shows nothing", what)
	}
}

func newSource(t *testing.T, wl *workload, replay bool, ep Endpoint, ranks int, seed uint64, rank func(int) (any, bool)) *source {
	pub, err := kvtest.NewPublisher(kvtest.Options{Replay: replay, Topic: "kv@test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	ep.Addr, ep.Replay, ep.Topic = pub.Addr(), pub.ReplayAddr(), "kv"
	s := &source{pub: pub, ep: ep, rank: rank}
	for r := 0; r < ranks; r++ {
		dp := uint32(r)
		if ranks == 1 {
			dp = ep.DPRank
		}
		s.workers = append(s.workers, flash.Worker{ID: ep.WorkerID(), DPRank: dp})
		s.engines = append(s.engines, newEngine(wl, seed+uint64(r)))
	}
	return s
}

// Several engines on loopback, DP ranks in batches and by endpoint, a lost
// batch replayed, a lost batch without replay, an engine restart with a
// reconnect: the index ends where the model fed the same events ends; with
// two writer goroutines, and synchronous with three lanes (the endpoints'
// goroutines apply their events themselves, in parallel).
func TestSubscriber_Loopback(t *testing.T) {
	t.Run("writers=2", func(t *testing.T) {
		testLoopback(t, flash.New(flash.WithBlockSize(testBlock), flash.WithWriters(2)))
	})
	t.Run("sync-lanes=3", func(t *testing.T) {
		testLoopback(t, flash.New(flash.WithBlockSize(testBlock), flash.WithWriters(0), flash.WithSyncLanes(3)))
	})
}

func testLoopback(t *testing.T, ix *flash.Indexer) {
	rng := rand.New(rand.NewPCG(3, 4))
	wl := newWorkload(rng, 40)
	lb := &loopback{t: t, wl: wl, ix: ix, m: newModel()}
	defer lb.ix.Close()
	lb.sub = New(lb.ix,
		WithBackoff(5*time.Millisecond, 50*time.Millisecond),
		WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		WithResyncHandler(func(r Resync) { lb.mu.Lock(); lb.resyncs = append(lb.resyncs, r); lb.mu.Unlock() }),
	)
	t.Cleanup(func() { _ = lb.sub.Close() })
	// A: two ranks in the batches, with replay. B: no rank in the batches,
	// the endpoint's rank 2 and an explicit worker id, with replay. C: a nil
	// rank, no replay.
	a := newSource(t, wl, true, Endpoint{}, 2, 10, func(r int) (any, bool) { return r, false })
	b := newSource(t, wl, true, Endpoint{Worker: 1000, DPRank: 2}, 1, 20, func(int) (any, bool) { return nil, true })
	c := newSource(t, wl, false, Endpoint{}, 1, 30, func(int) (any, bool) { return nil, false })

	// C has no replay: wait until it delivers before sending it anything
	// that matters (PUB drops what it sends before a subscriber is in).
	if err := lb.sub.Subscribe(c.ep); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "C delivers", func() string {
		if _, err := c.pub.Send(kvtest.Encode(0, []any{}, nil, false)); err != nil {
			return err.Error()
		}
		time.Sleep(2 * time.Millisecond)
		if lb.sub.Stats().Batches == 0 {
			return "no batch received"
		}
		return ""
	})
	for _, s := range []*source{a, b} {
		if err := lb.sub.Subscribe(s.ep); err != nil {
			t.Fatal(err)
		}
	}
	if err := lb.sub.Subscribe(a.ep); !errors.Is(err, ErrDuplicateEndpoint) {
		t.Fatalf("second Subscribe of one endpoint: %v", err)
	}

	// A and B may start before their subscription is in: the replay
	// socket fills in. A loses batch 10 (replayed); C loses batch 15 (not
	// replayable: C's worker is cleared).
	lb.send(a, 10, nil, true)
	lb.send(b, 40, nil, true)
	lb.send(c, 10, nil, false)
	lb.converge("A, B caught up", a, b, c)
	lb.send(a, 30, map[int]bool{0: true}, true)
	lb.send(c, 30, map[int]bool{5: true}, false)
	lb.converge("after the first runs", a, b, c)
	// Writer goroutines report rejections in the index's Stats only; a
	// synchronous Apply returns each one too (here: stores whose parent was
	// lost with C's unrecoverable batch). The subscriber counts a replay,
	// and an error Apply returned, just after the index has changed: the
	// counters settle once the index matches.
	var st Stats
	eventually(t, 10*time.Second, "stats after the first runs", func() string {
		st = lb.sub.Stats()
		var refused uint64
		if ix.Writers() == 0 {
			refused = ix.Stats().EventsRejected
		}
		if st.Gaps < 2 || st.Replays < 1 || st.Resyncs < 1 || st.Malformed != 0 || st.BadEvents != 0 || st.ApplyErrors != refused {
			return fmt.Sprintf("%+v (index rejected %d)", st, refused)
		}
		return ""
	})

	// A restarts: the connection drops, the subscriber reconnects, the new
	// run starts at 0 and A's workers are cleared.
	connects := st.Connects
	if err := a.pub.Restart(); err != nil {
		t.Fatal(err)
	}
	for _, w := range a.workers {
		_ = lb.m.Apply(flash.ClearedEvent(w))
	}
	for _, e := range a.engines {
		clear(e.held)
	}
	eventually(t, 10*time.Second, "A reconnects", func() string {
		if lb.sub.Stats().Connects <= connects {
			return "not reconnected"
		}
		return ""
	})
	lb.send(a, 30, nil, true)
	lb.send(b, 10, nil, true)
	lb.converge("after A restarted", a, b, c)
	st = lb.sub.Stats()
	t.Logf("subscriber: %+v", st)
	if st.Restarts != 1 || st.Disconnects < 1 {
		t.Fatalf("stats after the restart: %+v", st)
	}
	lb.mu.Lock()
	reasons := map[ResyncReason]int{}
	for _, r := range lb.resyncs {
		reasons[r.Reason]++
	}
	lb.mu.Unlock()
	if reasons[ResyncRestart] != 1 || reasons[ResyncGap] < 1 {
		t.Fatalf("resyncs %v", reasons)
	}
	if s := lb.ix.Stats(); s.EventsApplied == 0 || s.Clears == 0 {
		t.Fatalf("index stats %+v", s)
	}

	// Close stops every goroutine.
	if err := lb.sub.Close(); err != nil {
		t.Fatal(err)
	}
	if err := lb.sub.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if err := lb.sub.Subscribe(Endpoint{Addr: "tcp://127.0.0.1:1"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Subscribe after Close: %v", err)
	}
	a.pub.Close()
	b.pub.Close()
	c.pub.Close()
	// (zmq4's PUB sockets, the test publishers', leave a writer goroutine
	// behind on Close; the check is on the subscriber's side.)
	eventually(t, 5*time.Second, "the subscriber's goroutines end", func() string {
		buf := make([]byte, 1<<20)
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "kvevents.(*") || strings.Contains(g, "zmq4.(*qreader).listen") || strings.Contains(g, "connReaper") {
				return "left running:\n" + g
			}
		}
		return ""
	})
}

// An engine that comes up after the subscriber: dials fail and back off
// until it listens, then its events arrive.
func TestSubscriber_EngineComesUpLate(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "tcp://" + l.Addr().String()
	l.Close() // nothing listens there now
	ix := flash.New(flash.WithBlockSize(testBlock), flash.WithWriters(0))
	sub := New(ix, WithBackoff(2*time.Millisecond, 20*time.Millisecond), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer sub.Close()
	if err := sub.Subscribe(Endpoint{Addr: addr, Worker: 5}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "dials fail", func() string {
		if sub.Stats().DialFailures < 3 {
			return "fewer than 3 failed dials"
		}
		return ""
	})
	pub, err := kvtest.NewPublisher(kvtest.Options{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	w := flash.Worker{ID: 5}
	toks := tokensOf(3*testBlock, 1)
	eventually(t, 10*time.Second, "the engine's events arrive", func() string {
		if _, err := pub.Send(kvtest.Encode(0, []any{kvtest.Stored([]uint64{1, 2, 3}, nil, toks, testBlock)}, nil, true)); err != nil {
			return err.Error()
		}
		if n := ix.BlockCount(w); n != 3 {
			return fmt.Sprintf("worker holds %d blocks", n)
		}
		return ""
	})
	var q flash.Query
	var sc flash.Scores
	flash.NewTokenHasher(testBlock, "").Query(&q, toks)
	ix.FindMatches(q, &sc)
	if sc.Depth(w) != 3 {
		t.Fatalf("depth %d, want 3", sc.Depth(w))
	}
	if st := sub.Stats(); st.Connects != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// Unsubscribe stops one endpoint: its ranks are cleared while another
// endpoint shares its worker ID, and the worker is removed with the last.
func TestSubscriber_Unsubscribe(t *testing.T) {
	ix := flash.New(flash.WithBlockSize(testBlock), flash.WithWriters(2))
	defer ix.Close()
	sub := New(ix, WithBackoff(2*time.Millisecond, 20*time.Millisecond), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer sub.Close()
	type src struct {
		pub   *kvtest.Publisher
		ep    Endpoint
		ranks []any // the rank each batch carries (nil: none)
		ws    []flash.Worker
	}
	mk := func(ep Endpoint, ranks []any, ws ...flash.Worker) *src {
		pub, err := kvtest.NewPublisher(kvtest.Options{Replay: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pub.Close)
		ep.Addr, ep.Replay = pub.Addr(), pub.ReplayAddr()
		if err := sub.Subscribe(ep); err != nil {
			t.Fatal(err)
		}
		return &src{pub: pub, ep: ep, ranks: ranks, ws: ws}
	}
	a := mk(Endpoint{Worker: 7}, []any{0, 1}, flash.Worker{ID: 7}, flash.Worker{ID: 7, DPRank: 1})
	b := mk(Endpoint{Worker: 7, DPRank: 2}, []any{nil}, flash.Worker{ID: 7, DPRank: 2})
	c := mk(Endpoint{Worker: 9}, []any{nil}, flash.Worker{ID: 9})
	toks := tokensOf(3*testBlock, 5)
	send := func(s *src) {
		for _, r := range s.ranks {
			if _, err := s.pub.Send(kvtest.Encode(0, []any{kvtest.Stored([]uint64{1, 2, 3}, nil, toks, testBlock)}, r, r == nil)); err != nil {
				t.Fatal(err)
			}
		}
	}
	holds := func(want map[flash.Worker]int) {
		t.Helper()
		eventually(t, 10*time.Second, "workers hold", func() string {
			for _, s := range []*src{a, b, c} {
				send(s) // duplicates: they change nothing once applied
			}
			ix.Flush()
			got := map[flash.Worker]int{}
			ix.WorkerBlocks(func(w flash.Worker, n int) { got[w] = n })
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Sprintf("%v, want %v", got, want)
			}
			return ""
		})
	}
	holds(map[flash.Worker]int{a.ws[0]: 3, a.ws[1]: 3, b.ws[0]: 3, c.ws[0]: 3})
	if err := sub.Unsubscribe(a.ep.Addr); err != nil {
		t.Fatal(err)
	}
	// A's ranks are cleared (B still publishes for worker 7), and A's
	// later batches are not followed.
	holds(map[flash.Worker]int{a.ws[0]: 0, a.ws[1]: 0, b.ws[0]: 3, c.ws[0]: 3})
	if err := sub.Unsubscribe(b.ep.Addr); err != nil {
		t.Fatal(err)
	}
	holds(map[flash.Worker]int{c.ws[0]: 3})
	if err := sub.Unsubscribe(a.ep.Addr); !errors.Is(err, ErrUnknownEndpoint) {
		t.Fatalf("second Unsubscribe: %v", err)
	}
	if s := ix.Stats(); s.WorkersRemoved != 1 {
		t.Fatalf("WorkersRemoved %d, want 1", s.WorkersRemoved)
	}
}

func TestDPEndpoints(t *testing.T) {
	eps, err := DPEndpoints(Endpoint{Addr: "tcp://[fd00::7]:5557", Replay: "tcp://10.0.0.7:6000", Topic: "kv", DPRank: 4}, 2)
	if err != nil {
		t.Fatal(err)
	}
	id := Endpoint{Addr: "tcp://[fd00::7]:5557"}.WorkerID()
	want := []Endpoint{
		{Addr: "tcp://[fd00::7]:5557", Replay: "tcp://10.0.0.7:6000", Topic: "kv", Worker: id, DPRank: 4},
		{Addr: "tcp://[fd00::7]:5558", Replay: "tcp://10.0.0.7:6001", Topic: "kv", Worker: id, DPRank: 5},
	}
	if fmt.Sprint(eps) != fmt.Sprint(want) {
		t.Fatalf("%+v, want %+v", eps, want)
	}
	for _, bad := range []string{"ipc:///tmp/x", "tcp://host", "tcp://host:65535", "::"} {
		if _, err := DPEndpoints(Endpoint{Addr: bad}, 2); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Endpoints reports each endpoint's connection and sequence.
func TestSubscriber_Endpoints(t *testing.T) {
	ix := flash.New(flash.WithBlockSize(testBlock), flash.WithWriters(0))
	sub := New(ix, WithBackoff(2*time.Millisecond, 20*time.Millisecond), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer sub.Close()
	pub, err := kvtest.NewPublisher(kvtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if err := sub.Subscribe(Endpoint{Addr: pub.Addr(), Worker: 4}); err != nil {
		t.Fatal(err)
	}
	if err := sub.Subscribe(Endpoint{Addr: "tcp://127.0.0.1:1"}); err != nil { // nothing listens
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "a batch arrives", func() string {
		if _, err := pub.Send(kvtest.Encode(0, []any{}, nil, true)); err != nil {
			return err.Error()
		}
		if es := sub.Endpoints(); !es[1].Received {
			return fmt.Sprintf("%+v", es)
		}
		return ""
	})
	es := sub.Endpoints()
	if len(es) != 2 || es[0].Addr != "tcp://127.0.0.1:1" || es[0].Connected || es[0].Received ||
		es[1].Worker != 4 || !es[1].Connected || es[1].NextSeq == 0 {
		t.Fatalf("%+v", es)
	}
}

// A subscriber started next to an idle engine learns its cache from the
// replay socket, without waiting for the engine's next batch.
func TestSubscriber_CatchUpFromIdleEngine(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	wl := newWorkload(rng, 20)
	m := newModel()
	s := newSource(t, wl, true, Endpoint{Worker: 11}, 2, 40, func(r int) (any, bool) { return r, false })
	for k := 0; k < 30; k++ { // published before anyone listens
		payload, _, want := s.batch()
		if _, err := s.pub.Send(payload); err != nil {
			t.Fatal(err)
		}
		for _, ev := range want {
			_ = m.Apply(ev)
		}
	}
	ix := flash.New(flash.WithBlockSize(testBlock), flash.WithWriters(1))
	defer ix.Close()
	sub := New(ix, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer sub.Close()
	if err := sub.Subscribe(s.ep); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "caught up", func() string {
		// The replay counts itself once its socket says it is done, which
		// may be after its last batch is applied.
		if st := sub.Stats(); st.Replays+st.ReplayFailures == 0 {
			return fmt.Sprintf("replay not finished: %+v", st)
		}
		ix.Flush()
		return compare(ix, m, wl, s.workers)
	})
	if matched(m, wl) == 0 {
		t.Fatal("no prompt matches: the comparison shows nothing")
	}
	if st := sub.Stats(); st.Replays != 1 || st.ReplayedBatches != 30 || st.LateJoins != 0 || st.Resyncs != 0 {
		t.Fatalf("stats %+v", st)
	}
	if es := sub.Endpoints(); len(es) != 1 || !es[0].Received || es[0].NextSeq != 30 {
		t.Fatalf("endpoints %+v", es)
	}
}
