package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
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
		if len(rr.Matches) > 0 {
			m := rr.Matches[0]
			if m.Worker != 1 || m.Depth != 4 || m.Tokens != 64 || m.Blocks < 4 {
				t.Fatalf("best match %+v", m)
			}
			break
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
