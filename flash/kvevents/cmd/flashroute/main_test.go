package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/scaleout"
	"github.com/flashindexer/flashindexer/flash/scaleout/natstest"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseEndpoint(t *testing.T) {
	eps, err := parseEndpoint("tcp://10.0.0.7:5557,replay=tcp://10.0.0.7:5558,worker=9,ranks=3,topic=kv")
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != 3 || eps[2].Addr != "tcp://10.0.0.7:5559" || eps[2].Replay != "tcp://10.0.0.7:5560" ||
		eps[2].DPRank != 2 || eps[2].Worker != 9 || eps[0].Worker != 9 || eps[1].Topic != "kv" {
		t.Fatalf("%+v", eps)
	}
	for _, bad := range []string{"tcp://h:1,replay", "tcp://h:1,x=1", "tcp://h:1,ranks=0", "tcp://h:1,worker=-1", "h,ranks=2"} {
		if _, err := parseEndpoint(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The example end to end: the built-in engine publishes, the subscriber
// feeds the index, /route finds the engine's ranks for a demo prompt and
// /metrics shows the counters.
func TestServer_Demo(t *testing.T) {
	for _, c := range []struct {
		writers    int
		laneTables bool
	}{{1, false}, {0, false}, {0, true}} {
		t.Run(fmt.Sprintf("writers=%d/lane-tables=%v", c.writers, c.laneTables), func(t *testing.T) { testDemo(t, c.writers, c.laneTables) })
	}
}

func testDemo(t *testing.T, writers int, laneTables bool) {
	cfg := config{blockSize: 16, writers: writers, laneTables: laneTables, demo: true}
	s, err := newServer(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	h := httptest.NewServer(s.mux)
	defer h.Close()

	prompts := demoPrompts(rand.New(rand.NewPCG(1, 2)), 16)
	body, _ := json.Marshal(routeRequest{Tokens: prompts[0][:64+5]}) // the system prompt and a partial block
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Post(h.URL+"/route", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		var rr routeResponse
		err = json.NewDecoder(resp.Body).Decode(&rr)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if rr.Blocks != 4 {
			t.Fatalf("%d full blocks, want 4", rr.Blocks)
		}
		// An event's blocks are applied one after another while queries
		// run: until the one that stores the system prompt is through, the
		// answer may be shallower, never another worker or deeper.
		if len(rr.Matches) > 0 {
			m := rr.Matches[0]
			if m.Worker != 1 || m.Depth > 4 || m.Tokens != 16*m.Depth {
				t.Fatalf("best match %+v", m)
			}
			if m.Depth == 4 && m.Blocks >= 4 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no worker holds the demo's system prompt")
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Post(h.URL+"/route", "application/json", strings.NewReader("{"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a bad request: %d", resp.StatusCode)
	}
	resp, err = http.Get(h.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`flash_events_total{kind="stored",outcome="applied"}`,
		`flash_kvevents_batches_total`,
		`flash_query_duration_seconds_count`,
		`flash_worker_blocks{dp_rank="`,
		`flash_kvevents_endpoint_up{endpoint="tcp://127.0.0.1:`,
		`flash_kvevents_endpoint_next_seq{endpoint="tcp://127.0.0.1:`,
		`flash_kvevents_dropped_total{reason="bad_event"} 0`,
		`flash_kvevents_dropped_total{reason="malformed"} 0`,
		`flash_rejected_total{reason="unknown_parent"} 0`,
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// Writer goroutines have queues; a synchronous index has none.
	if q := strings.Contains(string(text), `flash_queue_depth{writer="0"}`); q != (writers > 0) {
		t.Errorf("writers %d: /metrics has flash_queue_depth{writer=\"0\"}: %v", writers, q)
	}
}

// limitedServer is a demo server with small limits, served with its own
// timeouts.
func limitedServer(t *testing.T, lim limits) *httptest.Server {
	t.Helper()
	h, _ := limitedServerOf(t, lim)
	return h
}

// limitedServerOf is limitedServer, with the server behind it.
func limitedServerOf(t *testing.T, lim limits) (*httptest.Server, *server) {
	t.Helper()
	s, err := newServer(config{blockSize: 16, demo: true, limits: lim}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	h := httptest.NewUnstartedServer(s.mux)
	h.Config = s.httpServer()
	h.Start()
	t.Cleanup(h.Close)
	return h, s
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url+"/route", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// /route reads only what a request can be: a body over the limit or too
// many tokens is 413, anything but one JSON object is 400, and a request
// within the limits is answered. Before, bodies of up to 64 MiB were read
// and null or trailing data answered 200.
func TestRoute_RejectsOversizedAndMalformed(t *testing.T) {
	lim := limits{maxTokens: 1000, maxInFlight: 2, busyWait: time.Second, readTimeout: 10 * time.Second}
	h := limitedServer(t, lim)
	tokens := func(n int, sep string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprint(i % 10)
		}
		return `{"tokens":[` + strings.Join(parts, ","+sep) + `]}`
	}
	for _, c := range []struct {
		name, body string
		code       int
	}{
		{"within the limits", tokens(1000, ""), http.StatusOK},
		{"body over the limit", tokens(1000, strings.Repeat(" ", 20)), http.StatusRequestEntityTooLarge},
		{"too many tokens", tokens(1001, ""), http.StatusRequestEntityTooLarge},
		{"null", `null`, http.StatusBadRequest},
		{"trailing garbage", `{"tokens":[1,2]} x`, http.StatusBadRequest},
		{"two objects", `{"tokens":[1]}{"tokens":[2]}`, http.StatusBadRequest},
		{"trailing space", `{"tokens":[1,2]}  ` + "\n", http.StatusOK},
	} {
		if code, body := post(t, h.URL, c.body); code != c.code {
			t.Errorf("%s: %d %q, want %d", c.name, code, body, c.code)
		}
	}
}

// A client that trickles its body is cut off at the read timeout instead of
// holding a request open (before: one byte every 1.5 s was read for good).
func TestRoute_SlowBodyCutOff(t *testing.T) {
	h := limitedServer(t, limits{maxTokens: 1000, maxInFlight: 2, busyWait: time.Second, readTimeout: 300 * time.Millisecond})
	pr, pw := io.Pipe()
	go func() {
		defer pw.Close()
		_, _ = pw.Write([]byte(`{"tokens":[`))
		for i := 0; i < 40; i++ {
			time.Sleep(50 * time.Millisecond)
			if _, err := pw.Write([]byte("1,")); err != nil {
				return
			}
		}
		_, _ = pw.Write([]byte(`1]}`))
	}()
	resp, err := http.Post(h.URL+"/route", "application/json", pr)
	if err == nil {
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("a body sent over 2 s was read whole with a 300 ms read timeout")
		}
	}
	_ = pr.CloseWithError(io.ErrClosedPipe)
}

// Requests past maxInFlight wait for a turn, then get 503: with every turn
// held, the next request is turned away, and once one is given back
// requests are answered again.
func TestRoute_BoundsRequestsInFlight(t *testing.T) {
	h, s := limitedServerOf(t, limits{maxTokens: 1000, maxInFlight: 1, busyWait: 100 * time.Millisecond, readTimeout: 10 * time.Second})
	s.turn <- struct{}{} // a request being answered
	if code, body := post(t, h.URL, `{"tokens":[1]}`); code != http.StatusServiceUnavailable {
		t.Fatalf("with the only turn held: %d %q", code, body)
	}
	<-s.turn
	if code, body := post(t, h.URL, `{"tokens":[1]}`); code != http.StatusOK {
		t.Fatalf("after the turn was given back: %d %q", code, body)
	}
}

// Clients slow to send their bodies hold no turn: with as many of them as
// turns, and twice as many, sending a byte every 50 ms, a request sent
// whole is answered at once. Before, the turn was taken before the body
// was read, and every other request got 503 until the slow ones were done.
func TestRoute_SlowClientsDoNotStarve(t *testing.T) {
	h, _ := limitedServerOf(t, limits{maxTokens: 1000, maxInFlight: 2, busyWait: 100 * time.Millisecond, readTimeout: 10 * time.Second})
	var pws []*io.PipeWriter
	var wg sync.WaitGroup
	for range 4 {
		pr, pw := io.Pipe()
		pws = append(pws, pw)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, err := http.Post(h.URL+"/route", "application/json", pr); err == nil {
				resp.Body.Close()
			}
		}()
		go func() {
			_, _ = pw.Write([]byte(`{"tokens":[`))
			for {
				time.Sleep(50 * time.Millisecond)
				if _, err := pw.Write([]byte("1,")); err != nil {
					return
				}
			}
		}()
	}
	defer func() {
		for _, pw := range pws {
			_ = pw.CloseWithError(io.ErrClosedPipe)
		}
		wg.Wait()
	}()
	time.Sleep(300 * time.Millisecond) // the slow requests are being read
	for i := range 5 {
		if code, body := post(t, h.URL, `{"tokens":[1]}`); code != http.StatusOK {
			t.Fatalf("request %d, with 4 slow clients sending: %d %q", i, code, body)
		}
	}
}

// Without an event source, /route routes on its own decisions: a new prompt
// goes to the fleet's next worker, and the same prompt, or one sharing its
// prefix, then follows it, its depth resting on the prediction alone; a
// client's own choice is recorded as given.
func TestRoute_PredictsWithoutEvents(t *testing.T) {
	for _, writers := range []int{0, 2} {
		t.Run(fmt.Sprintf("writers=%d", writers), func(t *testing.T) {
			s, err := newServer(config{blockSize: 16, writers: writers, fleet: []flash.Worker{{ID: 1}, {ID: 2}, {ID: 9, DPRank: 1}}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			h := httptest.NewServer(s.mux)
			defer h.Close()
			ask := func(req routeRequest) routeResponse {
				t.Helper()
				body, _ := json.Marshal(req)
				code, out := post(t, h.URL, string(body))
				var resp routeResponse
				if code != http.StatusOK || json.Unmarshal([]byte(out), &resp) != nil {
					t.Fatalf("%d %s", code, out)
				}
				s.ix.Flush() // the prediction is applied before the next request
				return resp
			}
			tokens := make([]uint32, 16*8)
			for i := range tokens {
				tokens[i] = uint32(i)
			}
			first := ask(routeRequest{Tokens: tokens})
			if first.Chosen == nil || len(first.Matches) != 0 {
				t.Fatalf("first request: %+v", first)
			}
			again := ask(routeRequest{Tokens: tokens[:16*5]})
			if again.Chosen == nil || *again.Chosen != *first.Chosen || len(again.Matches) != 1 ||
				again.Matches[0].Depth != 5 || again.Matches[0].Predicted != 5 {
				t.Fatalf("the same prefix again: %+v after %+v", again, first)
			}
			other := make([]uint32, 16*3)
			for i := range other {
				other[i] = uint32(1000 + i)
			}
			if r := ask(routeRequest{Tokens: other}); r.Chosen == nil || *r.Chosen == *first.Chosen {
				t.Fatalf("a new prompt went to %+v, not the fleet's next worker", r.Chosen)
			}
			mine := routeWorker{Worker: 9, DPRank: 1}
			other[0] = 5000
			ask(routeRequest{Tokens: other, Chosen: &mine})
			if r := ask(routeRequest{Tokens: other}); len(r.Matches) != 1 || r.Matches[0].Worker != 9 || r.Matches[0].DPRank != 1 || r.Matches[0].Depth != 3 {
				t.Fatalf("the client's choice was not recorded: %+v", r)
			}
		})
	}
	if _, err := newServer(config{blockSize: 16}, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil {
		t.Fatal("a server with no events and no fleet started")
	}
	if _, err := newServer(config{blockSize: 16, fleet: []flash.Worker{{ID: 1}}, predict: "maybe"}, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil {
		t.Fatal("-predict maybe accepted")
	}
}

func TestParseFleet(t *testing.T) {
	ws, err := parseFleet("1, 2:3,40")
	if err != nil || len(ws) != 3 || ws[1] != (flash.Worker{ID: 2, DPRank: 3}) || ws[2].ID != 40 {
		t.Fatalf("%v %v", ws, err)
	}
	for _, bad := range []string{"", "x", "1:y", "1,,2"} {
		if _, err := parseFleet(bad); err == nil {
			t.Errorf("parseFleet(%q) accepted", bad)
		}
	}
}

// With -nats, flashroute is a replica of a JetStream stream of events: an
// event published to the stream by a relay reaches /route.
func TestServer_NATSReplica(t *testing.T) {
	ns := natstest.Server(t, t.TempDir(), -1)
	js := natstest.Connect(t, ns.ClientURL())
	ctx := context.Background()
	if _, err := scaleout.EnsureStream(ctx, js, scaleout.StreamConfig("KV", "kv", 0, 0)); err != nil {
		t.Fatal(err)
	}
	s, err := newServer(config{blockSize: 16, nats: natsConfig{url: ns.ClientURL(), stream: "KV", bucket: "snapshots", every: time.Hour}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	h := httptest.NewServer(s.mux)
	defer h.Close()

	tokens := make([]uint32, 16*4)
	for i := range tokens {
		tokens[i] = uint32(7 * i)
	}
	var q flash.Query
	flash.NewTokenHasher(16, "").Query(&q, tokens)
	blocks := make([]flash.Block, len(q.Locals))
	for i, l := range q.Locals {
		blocks[i] = flash.Block{Hash: flash.ExternalHash(q.Seqs[i]), Local: l}
	}
	ev := flash.StoredEvent(flash.Worker{ID: 5}, blocks...)
	if _, err := scaleout.NewRelay(js, "kv").Publish(ctx, scaleout.MsgID("engine", 0, 0), &ev); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(routeRequest{Tokens: tokens})
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, out := post(t, h.URL, string(body))
		var resp routeResponse
		if json.Unmarshal([]byte(out), &resp) == nil && len(resp.Matches) == 1 && resp.Matches[0].Worker == 5 && resp.Matches[0].Depth == 4 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stream's event never reached /route: %s", out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A prediction may only name a worker the router knows (the fleet's, or one
// the index holds from events): clients naming made-up workers get 400 and
// take no slot, so the fleet's own decisions keep theirs; unknown fields
// get 400 too. Before, 1,024 made-up workers took every slot, after which
// every decision for a new worker was dropped silently, and
// "chosen":{"id":3} recorded a prediction for worker 0.
func TestRoute_ChosenMustBeKnown(t *testing.T) {
	s, err := newServer(config{blockSize: 16, predict: "on", fleet: []flash.Worker{{ID: 1}, {ID: 2}}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	h := httptest.NewServer(s.mux)
	defer h.Close()
	tokens := `[` + strings.TrimSuffix(strings.Repeat("7,", 32), ",") + `]`
	for id := 100; id < 100+flash.DefaultMaxWorkers+10; id++ {
		if code, body := post(t, h.URL, fmt.Sprintf(`{"tokens":%s,"chosen":{"worker":%d}}`, tokens, id)); code != http.StatusBadRequest {
			t.Fatalf("chosen worker %d, unknown: %d %q", id, code, body)
		}
	}
	for _, body := range []string{
		`{"tokens":` + tokens + `,"chosen":{"id":3}}`,
		`{"tokens":` + tokens + `,"choice":{"worker":1}}`,
	} {
		if code, out := post(t, h.URL, body); code != http.StatusBadRequest {
			t.Fatalf("%s: %d %q, want 400", body, code, out)
		}
	}
	s.ix.Flush()
	if n := s.ix.Workers(); n != 0 {
		t.Fatalf("refused requests took %d worker slots", n)
	}
	// The fleet's workers are known, and the router's own choice too.
	if code, body := post(t, h.URL, `{"tokens":`+tokens+`,"chosen":{"worker":2}}`); code != http.StatusOK {
		t.Fatalf("chosen fleet worker: %d %q", code, body)
	}
	if code, body := post(t, h.URL, `{"tokens":[`+strings.TrimSuffix(strings.Repeat("8,", 32), ",")+`]}`); code != http.StatusOK {
		t.Fatalf("the router's choice: %d %q", code, body)
	}
	s.ix.Flush()
	if n := s.ix.Workers(); n != 2 {
		t.Fatalf("%d workers hold slots, want the fleet's 2", n)
	}
}

// The demo engine caches each block once and evicts only what it holds:
// its events are never counted as errors (before, shared prefixes were
// removed once per prompt holding them: remove_unknown in the hundreds).
// /demo/prompt serves a prompt it holds, which /route then finds whole.
func TestServer_DemoRoutes(t *testing.T) {
	s, err := newServer(config{blockSize: 16, writers: 1, demo: true}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	h := httptest.NewServer(s.mux)
	defer h.Close()
	deadline := time.Now().Add(20 * time.Second)
	for hit := 0; hit < 20; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 20 demo prompts found whole", hit)
		}
		resp, err := http.Get(h.URL + "/demo/prompt")
		if err != nil {
			t.Fatal(err)
		}
		req, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			time.Sleep(20 * time.Millisecond) // the engine holds nothing yet
			continue
		}
		code, out := post(t, h.URL, string(req))
		var rr routeResponse
		if code != http.StatusOK || json.Unmarshal([]byte(out), &rr) != nil {
			t.Fatalf("%d %s", code, out)
		}
		// The engine may evict it between the two requests, or its event
		// may not be applied yet: then it matches less, or not at all.
		if len(rr.Matches) > 0 && rr.Matches[0].Depth == rr.Blocks && rr.Matches[0].Worker == 1 {
			hit++
		}
		time.Sleep(10 * time.Millisecond)
	}
	for s.ix.Flush(); s.ix.Stats().BlocksRemoved < 100 && time.Now().Before(deadline); s.ix.Flush() {
		time.Sleep(20 * time.Millisecond) // the engine evicts once its ranks hold 7 prompts
	}
	st := s.ix.Stats()
	if st.RemovesUnknown != 0 || st.EventsRejected != 0 || st.BlocksRemoved < 100 {
		t.Fatalf("the demo's events: %d unknown removes, %d rejected, %d blocks removed", st.RemovesUnknown, st.EventsRejected, st.BlocksRemoved)
	}
	// The routed requests show in /metrics: hits, matched blocks, and
	// the sampled latency histogram (each stripe's first query is timed).
	resp, err := http.Get(h.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{"flash_query_hits_total", "flash_query_matched_blocks_total", "flash_query_duration_seconds_count"} {
		re := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`)
		m := re.FindSubmatch(text)
		if m == nil || string(m[1]) == "0" {
			t.Errorf("/metrics: %s is %q after %d routed requests", name, m, 20)
		}
	}
}

// With tiers, /route reports the index's tier names and each match's depth
// per tier, and counts the routed request's blocks by tier.
func TestRoute_Tiers(t *testing.T) {
	tiers, err := parseTiers("GPU, CPU=0.5")
	if err != nil || len(tiers) != 2 || tiers[1] != (flash.TierSpec{Name: "CPU", Weight: 0.5}) {
		t.Fatalf("parseTiers: %v %v", tiers, err)
	}
	for _, bad := range []string{"GPU,CPU=0", "GPU,=1", "GPU,CPU=x", "A,B,C,D,E"} {
		if _, err := parseTiers(bad); err == nil {
			t.Errorf("parseTiers(%q) accepted", bad)
		}
	}
	s, err := newServer(config{blockSize: 4, writers: 0, tiers: tiers, fleet: []flash.Worker{{ID: 1}}, predict: "on"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	h := flash.NewTokenHasher(4, "")
	toks := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	locals := h.LocalHashes(nil, toks)
	var blocks []flash.Block
	for i, l := range locals {
		blocks = append(blocks, flash.Block{Hash: flash.ExternalHash(100 + i), Local: l})
	}
	w := flash.Worker{ID: 1}
	for _, ev := range []flash.Event{flash.StoredEvent(w, blocks[:1]...), flash.StoredEvent(w, blocks[1:]...).WithParent(100).InTier(1)} {
		if err := s.ix.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	s.ix.Flush()
	srv := httptest.NewServer(s.mux)
	defer srv.Close()
	code, body := post(t, srv.URL, `{"tokens":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}`)
	want := `{"blocks":4,"tiers":["GPU","CPU"],"matches":[{"worker":1,"dp_rank":0,"depth":3,"predicted":0,"tokens":12,"blocks":3,"tier_depth":[1,3]}],"chosen":{"worker":1,"dp_rank":0}}`
	if code != http.StatusOK || strings.TrimSpace(body) != want {
		t.Fatalf("%d %s\nwant %s", code, body, want)
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	metrics, _ := io.ReadAll(resp.Body)
	for _, line := range []string{`flash_routed_blocks_total{tier="GPU"} 1`, `flash_routed_blocks_total{tier="CPU"} 2`, `flash_routed_blocks_total{tier="none"} 1`} {
		if !strings.Contains(string(metrics), line) {
			t.Fatalf("metrics lack %q", line)
		}
	}
}
