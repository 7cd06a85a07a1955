// Command flashroute subscribes a flash index to inference engines' KV
// events over ZMQ and serves /metrics (Prometheus) and /route, which answers
// "which workers hold the longest prefix of these tokens".
//
//	go run ./cmd/flashroute -endpoint tcp://10.0.0.7:5557,replay=tcp://10.0.0.7:5558 -listen :8080
//	go run ./cmd/flashroute -demo     # a built-in engine publishes synthetic events
//
//	curl -s localhost:8080/route -d '{"tokens":[1,2,3,...],"lora":""}'
//	go run ./cmd/flashroute -fleet 1,2,3,4  # no events: route on predictions alone
//	go run ./cmd/flashroute -nats nats://10.0.0.9:4222 -nats-snapshots snapshots  # a replica (flash/scaleout)
//
// With -predict (on by default when there is no -endpoint nor -demo), /route
// records each routing decision as a prediction (flash.Predictor): the
// worker the client names in "chosen", or else the one /route chooses and
// returns: the deepest match, or when nothing matches, the -fleet's next
// worker in turn. A client may only name a worker the router knows: one of
// the -fleet, or one the index holds from its events (400 otherwise), so
// that clients cannot take the index's worker slots.
//
// An -endpoint is ADDR[,replay=ADDR][,topic=T][,worker=ID][,dp=RANK][,ranks=N]:
// ranks=N subscribes N data-parallel ranks on consecutive ports (vLLM's
// layout), all under one worker ID.
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/kvevents"
	"github.com/flashindexer/flashindexer/flash/kvevents/flashprom"
	"github.com/flashindexer/flashindexer/flash/kvevents/kvtest"
	"github.com/flashindexer/flashindexer/flash/scaleout"
)

type endpointList []kvevents.Endpoint

func (l *endpointList) String() string { return fmt.Sprint(len(*l), " endpoints") }

func (l *endpointList) Set(v string) error {
	eps, err := parseEndpoint(v)
	if err != nil {
		return err
	}
	*l = append(*l, eps...)
	return nil
}

// parseEndpoint reads ADDR[,key=value...].
func parseEndpoint(v string) ([]kvevents.Endpoint, error) {
	parts := strings.Split(v, ",")
	ep := kvevents.Endpoint{Addr: parts[0]}
	ranks := 1
	for _, kv := range parts[1:] {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want key=value", kv)
		}
		var err error
		switch k {
		case "replay":
			ep.Replay = val
		case "topic":
			ep.Topic = val
		case "worker":
			ep.Worker, err = strconv.ParseUint(val, 10, 64)
		case "dp":
			var r uint64
			r, err = strconv.ParseUint(val, 10, 32)
			ep.DPRank = uint32(r)
		case "ranks":
			ranks, err = strconv.Atoi(val)
			if err == nil && ranks < 1 {
				err = errors.New("must be at least 1")
			}
		default:
			return nil, fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
	}
	if ranks == 1 {
		return []kvevents.Endpoint{ep}, nil
	}
	return kvevents.DPEndpoints(ep, ranks)
}

type config struct {
	endpoints  endpointList
	listen     string
	blockSize  int
	writers    int
	laneTables bool
	demo       bool
	predict    string        // on, off, or auto: on without an event source
	predictTTL time.Duration // 0: flash.DefaultPredictionTTL
	fleet      []flash.Worker
	tiers      []flash.TierSpec // nil: flash.DefaultTiers
	nats       natsConfig
	limits
}

// natsConfig makes flashroute a replica of a JetStream stream of events
// (flash/scaleout): URL "" is none.
type natsConfig struct {
	url, stream, bucket string
	every               time.Duration // snapshot period
}

// limits bound what /route holds at once: a request's tokens and body, the
// requests being served, and how long a client may take.
type limits struct {
	maxTokens   int           // tokens in one request
	maxInFlight int           // requests read and answered at once
	busyWait    time.Duration // how long a request waits for a turn before 503
	readTimeout time.Duration // the whole request, body included
}

// defaultLimits: 2M tokens is twice the longest context served widely today
// (1M); a request's body is then at most 22 MB of JSON, and 2 per CPU of
// them at once stay well under a router's memory. A client gets 30 s to
// send its request.
func defaultLimits() limits {
	return limits{maxTokens: 1 << 21, maxInFlight: 2 * runtime.GOMAXPROCS(0), busyWait: time.Second, readTimeout: 30 * time.Second}
}

// maxBody is the largest request body for maxTokens tokens: each at most
// 10 digits and a comma, and 4 KiB for the rest (the LoRA name, spaces).
func (l limits) maxBody() int64 { return int64(l.maxTokens)*11 + 4096 }

// server holds the index, the subscriber and the HTTP handlers.
type server struct {
	ix   *flash.Indexer
	sub  *kvevents.Subscriber
	prom *flashprom.Collector
	reg  *prometheus.Registry
	mux  *http.ServeMux
	pool sync.Pool // *routeScratch
	stop []func()
	lim  limits
	turn chan struct{} // a token per request in flight

	predict  bool          // /route records its decisions
	ttl      time.Duration // of those predictions
	fleet    []flash.Worker
	next     atomic.Uint64 // the fleet's next worker in turn
	replica  *scaleout.Replica
	demo     *demo         // -demo's engine
	demoTurn atomic.Uint64 // the next rank /demo/prompt asks
}

type routeScratch struct {
	q  flash.Query
	sc flash.Scores
}

func newServer(cfg config, log *slog.Logger) (*server, error) {
	// With no writers, the subscriber's goroutines (one per endpoint) apply
	// the events themselves, in a lane per CPU.
	if cfg.limits == (limits{}) {
		cfg.limits = defaultLimits()
	}
	if cfg.maxTokens < 1 || cfg.maxInFlight < 1 || cfg.readTimeout <= 0 {
		return nil, fmt.Errorf("limits must be positive: %+v", cfg.limits)
	}
	s := &server{ix: flash.New(flash.WithBlockSize(cfg.blockSize), flash.WithTiers(cfg.tiers...), flash.WithWriters(cfg.writers), flash.WithSyncLanes(runtime.GOMAXPROCS(0)), flash.WithLaneTables(cfg.laneTables)),
		lim: cfg.limits, turn: make(chan struct{}, cfg.maxInFlight)}
	s.sub = kvevents.New(s.ix, kvevents.WithLogger(log), kvevents.WithResyncHandler(func(r kvevents.Resync) {
		log.Warn("workers cleared", "endpoint", r.Endpoint, "reason", r.Reason.String(), "lost_from", r.From, "lost_to", r.To, "workers", len(r.Cleared))
	}))
	s.prom = flashprom.New(s.ix, flashprom.WithSubscriber(s.sub))
	s.reg = prometheus.NewRegistry()
	s.reg.MustRegister(s.prom, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.pool.New = func() any { return new(routeScratch) }
	s.fleet, s.ttl = cfg.fleet, cmp.Or(cfg.predictTTL, flash.DefaultPredictionTTL)
	switch cfg.predict {
	case "on":
		s.predict = true
	case "", "auto":
		s.predict = len(cfg.endpoints) == 0 && !cfg.demo && cfg.nats.url == ""
	case "off":
	default:
		return nil, fmt.Errorf("-predict %q: want on, off or auto", cfg.predict)
	}
	eps := cfg.endpoints
	if cfg.demo {
		d, ep, stop, err := startDemo(cfg.blockSize)
		if err != nil {
			return nil, err
		}
		s.demo = d
		s.stop = append(s.stop, stop)
		eps = append(eps, ep)
	}
	if cfg.nats.url != "" {
		if err := s.startReplica(cfg.nats, log); err != nil {
			s.close()
			return nil, err
		}
	}
	if len(eps) == 0 && s.replica == nil && (!s.predict || len(s.fleet) == 0) {
		return nil, errors.New("no -endpoint, -demo, -nats, or -fleet to route on predictions")
	}
	for _, ep := range eps {
		if err := s.sub.Subscribe(ep); err != nil {
			s.close()
			return nil, fmt.Errorf("%s: %w", ep.Addr, err)
		}
		log.Info("subscribed", "endpoint", ep.Addr, "replay", ep.Replay, "worker", ep.WorkerID(), "dp_rank", ep.DPRank)
	}
	s.mux = http.NewServeMux()
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	s.mux.HandleFunc("POST /route", s.route)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	if s.demo != nil {
		s.mux.HandleFunc("GET /demo/prompt", s.demoPrompt)
	}
	return s, nil
}

func (s *server) close() {
	for _, f := range s.stop {
		f()
	}
	_ = s.sub.Close()
	_ = s.ix.Close()
}

type routeRequest struct {
	Tokens []uint32 `json:"tokens"`
	LoRA   string   `json:"lora"`
	// Chosen, with -predict, is the worker the client sends the request to:
	// /route records it as a prediction instead of choosing one.
	Chosen *routeWorker `json:"chosen,omitempty"`
}

type routeWorker struct {
	Worker uint64 `json:"worker"`
	DPRank uint32 `json:"dp_rank"`
}

// routeMatch is a flash.Match, its fields named as the library names them
// (docs/ROUTE.md).
type routeMatch struct {
	Worker    uint64 `json:"worker"`
	DPRank    uint32 `json:"dp_rank"`
	Depth     int    `json:"depth"`
	Predicted int    `json:"predicted"` // of Depth, the blocks held by predictions alone
	Tokens    int    `json:"tokens"`
	Blocks    int    `json:"blocks"`
	// TierDepth is Match.TierDepth: per tier of the index, the leading
	// blocks held in it or a faster one.
	TierDepth []int32 `json:"tier_depth"`
}

type routeResponse struct {
	Blocks  int          `json:"blocks"`  // full blocks in the request
	Tiers   []string     `json:"tiers"`   // the index's tiers, fastest first
	Matches []routeMatch `json:"matches"` // best first: deepest, then fewest blocks held
	// Chosen, with -predict, is the worker recorded as holding the request's
	// blocks from now on (for -predict-ttl).
	Chosen *routeWorker `json:"chosen,omitempty"`
}

// httpServer serves s's handlers with its limits: a client that takes longer
// than readTimeout to send its request, or a response nobody reads for as
// long, is cut off.
func (s *server) httpServer() *http.Server {
	return &http.Server{Handler: s.mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: s.lim.readTimeout,
		WriteTimeout: s.lim.readTimeout + 5*time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
}

// route answers which workers hold the longest prefix of the tokens. The
// body is read first (at most maxBody bytes, within the server's read
// timeout), so that a client slow to send it holds no turn; then at most
// maxInFlight requests are decoded and answered at once, and one that waits
// longer than busyWait for its turn gets 503. A body over maxBody, or more
// than maxTokens tokens, gets 413; anything but one JSON object of the
// request's fields, or a "chosen" worker the router does not know, 400.
func (s *server) route(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.lim.maxBody()))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		http.Error(w, fmt.Sprintf("request body over %d bytes", tooBig.Limit), http.StatusRequestEntityTooLarge)
		return
	case err != nil:
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	select {
	case s.turn <- struct{}{}:
		defer func() { <-s.turn }()
	default:
		t := time.NewTimer(s.lim.busyWait)
		select {
		case s.turn <- struct{}{}:
			t.Stop()
			defer func() { <-s.turn }()
		case <-t.C:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy: too many requests in flight", http.StatusServiceUnavailable)
			return
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	var req *routeRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err = dec.Decode(&req)
	if err == nil {
		if _, end := dec.Token(); end != io.EOF {
			err = errors.New("trailing data after the request")
		} else if req == nil {
			err = errors.New("no request object")
		}
	}
	switch {
	case err != nil:
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	case len(req.Tokens) > s.lim.maxTokens:
		http.Error(w, fmt.Sprintf("%d tokens, at most %d", len(req.Tokens), s.lim.maxTokens), http.StatusRequestEntityTooLarge)
		return
	case s.predict && req.Chosen != nil && !s.knows(flash.Worker{ID: req.Chosen.Worker, DPRank: req.Chosen.DPRank}):
		http.Error(w, fmt.Sprintf("bad request: chosen worker %d rank %d is not in the fleet and has sent no events", req.Chosen.Worker, req.Chosen.DPRank), http.StatusBadRequest)
		return
	}
	x := s.pool.Get().(*routeScratch)
	defer s.pool.Put(x)
	flash.NewTokenHasher(s.ix.Config().BlockSize, req.LoRA).Query(&x.q, req.Tokens)
	s.ix.FindMatches(x.q, &x.sc) // counted and, one in 64, timed by the index
	x.sc.Sort()
	tiers := s.ix.Config().Tiers
	resp := routeResponse{Blocks: len(x.q.Locals), Tiers: make([]string, len(tiers)), Matches: make([]routeMatch, 0, len(x.sc.Matches))}
	for t := range tiers {
		resp.Tiers[t] = tiers[t].Name
	}
	for _, m := range x.sc.Matches {
		resp.Matches = append(resp.Matches, routeMatch{Worker: m.Worker.ID, DPRank: m.Worker.DPRank, Depth: m.Depth, Predicted: m.Predicted, Tokens: m.Tokens, Blocks: m.Blocks,
			TierDepth: slices.Clone(m.TierDepth[:len(tiers)])})
	}
	// The request goes to the best match, unless the client chose.
	routed, matched := x.sc.Best()
	if req.Chosen != nil {
		w := flash.Worker{ID: req.Chosen.Worker, DPRank: req.Chosen.DPRank}
		routed = flash.Match{}
		for _, m := range x.sc.Matches {
			if m.Worker == w {
				routed = m
			}
		}
	}
	if s.predict && len(x.q.Locals) > 0 {
		resp.Chosen = s.choose(req.Chosen, routed, matched)
		if resp.Chosen != nil {
			_ = s.ix.Predict(flash.Worker{ID: resp.Chosen.Worker, DPRank: resp.Chosen.DPRank}, x.q, s.ttl)
		}
	}
	s.prom.ObserveRoute(routed, len(x.q.Locals))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// startReplica feeds the index from a JetStream stream: from the newest
// snapshot in the bucket, if any, and then taking one every period.
func (s *server) startReplica(c natsConfig, log *slog.Logger) error {
	nc, err := nats.Connect(c.url, nats.MaxReconnects(-1))
	if err != nil {
		return fmt.Errorf("-nats: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = append(s.stop, func() { cancel(); nc.Close() })
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	s.replica = scaleout.NewReplica(js, c.stream, s.ix)
	if c.bucket != "" {
		store, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: c.bucket, Storage: jetstream.FileStorage})
		if err != nil {
			return fmt.Errorf("-nats-snapshots: %w", err)
		}
		switch err := s.replica.Restore(ctx, store); {
		case err == nil:
			log.Info("restored", "stream_seq", s.replica.Applied())
		case errors.Is(err, scaleout.ErrSnapshotOtherStream):
			// The stream was created anew: the snapshot's state is not its
			// own. Read this stream from its start, as with no snapshot;
			// the next snapshot replaces the stale one.
			log.Warn("snapshot of another stream ignored", "err", err)
		case !errors.Is(err, jetstream.ErrObjectNotFound):
			return fmt.Errorf("restoring the newest snapshot: %w", err)
		}
		go s.replica.SnapshotEvery(ctx, store, c.every, func(seq uint64, err error) {
			if err != nil {
				log.Warn("snapshot", "err", err)
			}
		})
	}
	go func() {
		if err := s.replica.Run(ctx); err != nil {
			log.Error("replica", "err", err)
		}
	}()
	log.Info("replica", "nats", c.url, "stream", c.stream, "from", s.replica.Applied()+1)
	return nil
}

// demoPrompt answers, with -demo, a /route request for a prompt the demo
// engine holds now: its tokens, as a client would send them. Just after
// the start it waits up to 2 s for the engine's first prompt.
func (s *server) demoPrompt(w http.ResponseWriter, r *http.Request) {
	p, ok := s.demo.prompt(s.demoTurn.Add(1))
	for end := time.Now().Add(2 * time.Second); !ok && time.Now().Before(end) && r.Context().Err() == nil; {
		time.Sleep(10 * time.Millisecond)
		p, ok = s.demo.prompt(s.demoTurn.Load())
	}
	if !ok {
		http.Error(w, "the demo engine holds no prompt yet", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(routeRequest{Tokens: p})
}

// knows reports whether w is a worker of the fleet, or one the index holds
// (from its events, or an earlier prediction for a worker known then).
func (s *server) knows(w flash.Worker) bool {
	return slices.Contains(s.fleet, w) || s.ix.HasWorker(w)
}

// choose returns the worker a request goes to: the client's, else best,
// the best match (Scores.Best) when matched, else the fleet's next worker
// in turn; nil when there is none.
func (s *server) choose(client *routeWorker, best flash.Match, matched bool) *routeWorker {
	if client != nil {
		return client
	}
	if matched {
		return &routeWorker{Worker: best.Worker.ID, DPRank: best.Worker.DPRank}
	}
	if len(s.fleet) == 0 {
		return nil
	}
	w := s.fleet[(s.next.Add(1)-1)%uint64(len(s.fleet))]
	return &routeWorker{Worker: w.ID, DPRank: w.DPRank}
}

// parseTiers reads NAME[=WEIGHT],... into tiers.
func parseTiers(v string) ([]flash.TierSpec, error) {
	var out []flash.TierSpec
	for _, f := range strings.Split(v, ",") {
		name, weight, hasWeight := strings.Cut(strings.TrimSpace(f), "=")
		ts := flash.TierSpec{Name: name}
		if hasWeight {
			w, err := strconv.ParseFloat(weight, 64)
			if err != nil || !(w > 0) {
				return nil, fmt.Errorf("tier %q: the weight must be a positive number", f)
			}
			ts.Weight = w
		}
		if name == "" {
			return nil, fmt.Errorf("tier %q has no name", f)
		}
		out = append(out, ts)
	}
	if len(out) > flash.MaxTiers {
		return nil, fmt.Errorf("%d tiers, at most %d", len(out), flash.MaxTiers)
	}
	return out, nil
}

// parseFleet reads ID[:RANK],... into workers.
func parseFleet(v string) ([]flash.Worker, error) {
	var out []flash.Worker
	for _, f := range strings.Split(v, ",") {
		id, rank, _ := strings.Cut(strings.TrimSpace(f), ":")
		w, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("fleet worker %q: %w", f, err)
		}
		var r uint64
		if rank != "" {
			if r, err = strconv.ParseUint(rank, 10, 32); err != nil {
				return nil, fmt.Errorf("fleet worker %q: %w", f, err)
			}
		}
		out = append(out, flash.Worker{ID: w, DPRank: uint32(r)})
	}
	return out, nil
}

// demo is a stand-in engine on loopback: four DP ranks' worth of requests
// over a small pool of prompts with shared prefixes, cached and evicted as
// an engine's prefix cache under pressure would (each block once, however
// many cached prompts share it; an evicted prompt's own blocks leave,
// deepest first), a batch every 10 ms.
type demo struct {
	pub       *kvtest.Publisher
	blockSize int
	prompts   [][]uint32
	mu        sync.Mutex // ranks, read by /demo/prompt
	ranks     [demoRanks]demoRank
}

const demoRanks = 4

// demoRank is one rank's cache: the prompts it holds, and for each block
// it holds (by the engine's id) how many of them share it.
type demoRank struct {
	held []int // prompt indexes, oldest first
	refs map[uint64]int
}

// startDemo starts the demo engine and returns its endpoint (worker 1).
func startDemo(blockSize int) (*demo, kvevents.Endpoint, func(), error) {
	pub, err := kvtest.NewPublisher(kvtest.Options{Replay: true})
	if err != nil {
		return nil, kvevents.Endpoint{}, nil, err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	d := &demo{pub: pub, blockSize: blockSize, prompts: demoPrompts(rng, blockSize)}
	for r := range d.ranks {
		d.ranks[r].refs = map[uint64]int{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rank := i % demoRanks
			if events := d.step(rank, rng.IntN(len(d.prompts))); len(events) > 0 {
				_, _ = pub.Send(kvtest.Encode(float64(time.Now().UnixNano())/1e9, events, rank, false))
			}
		}
	}()
	stop := func() { cancel(); <-done; pub.Close() }
	return d, kvevents.Endpoint{Addr: pub.Addr(), Replay: pub.ReplayAddr(), Worker: 1}, stop, nil
}

// step serves prompt pi on rank: its blocks not cached yet are stored,
// and past 6 prompts the rank's oldest other one is evicted. It returns
// the events.
func (d *demo) step(rank, pi int) []any {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := &d.ranks[rank]
	var events []any
	if !slices.Contains(r.held, pi) {
		p := d.prompts[pi]
		n := len(p) / d.blockSize
		from := -1 // the first block not cached: the rest follow it
		var hashes []uint64
		for b := range n {
			h := demoHash(p[:(b+1)*d.blockSize])
			if r.refs[h]++; r.refs[h] == 1 {
				if from < 0 {
					from = b
				}
				hashes = append(hashes, h)
			}
		}
		if from >= 0 {
			var parent any
			if from > 0 {
				parent = demoHash(p[:from*d.blockSize])
			}
			events = append(events, kvtest.Stored(hashes, parent, p[from*d.blockSize:n*d.blockSize], d.blockSize, nil, "GPU"))
		}
		r.held = append(r.held, pi)
	}
	if len(r.held) > 6 {
		pj := r.held[0]
		if pj == pi {
			pj = r.held[1]
		}
		r.held = slices.DeleteFunc(r.held, func(k int) bool { return k == pj })
		p := d.prompts[pj]
		var gone []uint64
		for b := len(p) / d.blockSize; b > 0; b-- {
			h := demoHash(p[:b*d.blockSize])
			if r.refs[h]--; r.refs[h] == 0 {
				delete(r.refs, h)
				gone = append(gone, h)
			}
		}
		if len(gone) > 0 {
			events = append(events, kvtest.Removed(gone, "GPU"))
		}
	}
	return events
}

// prompt returns a prompt a rank holds now (the newest of a rank picked
// by turn), or false before any.
func (d *demo) prompt(turn uint64) ([]uint32, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := range uint64(demoRanks) {
		if h := d.ranks[(turn+k)%demoRanks].held; len(h) > 0 {
			return d.prompts[h[len(h)-1]], true
		}
	}
	return nil, false
}

// demoPrompts returns prompts sharing a system prompt and some history.
func demoPrompts(rng *rand.Rand, blockSize int) [][]uint32 {
	system := make([]uint32, 4*blockSize)
	for i := range system {
		system[i] = uint32(rng.IntN(32000))
	}
	var out [][]uint32
	for i := 0; i < 24; i++ {
		p := slices.Clone(system)
		if i > 0 && i%3 != 0 {
			p = slices.Clone(out[i-1]) // a conversation's next turn
		}
		for k, n := 0, (2+rng.IntN(6))*blockSize; k < n; k++ {
			p = append(p, uint32(rng.IntN(32000)))
		}
		out = append(out, p)
	}
	return out
}

func demoHash(prefix []uint32) uint64 { return uint64(flash.HashTokens(prefix, 0xd3)) }

func main() {
	var cfg config
	flag.Var(&cfg.endpoints, "endpoint", "engine KV-event publisher: ADDR[,replay=ADDR][,topic=T][,worker=ID][,dp=RANK][,ranks=N] (repeatable)")
	flag.StringVar(&cfg.listen, "listen", "127.0.0.1:8080", "HTTP address for /route, /metrics and /healthz")
	flag.IntVar(&cfg.blockSize, "block-size", flash.DefaultBlockSize, "tokens per KV block (the engines')")
	flag.Func("tiers", "KV-cache tiers, fastest first: NAME[=WEIGHT],... (default GPU; e.g. GPU,CPU: engines' events name their tier by these names, and /route reports a depth per tier)", func(v string) (err error) {
		cfg.tiers, err = parseTiers(v)
		return err
	})
	flag.IntVar(&cfg.writers, "writers", flash.DefaultWriters(), "index writer goroutines (0: the subscriber's goroutine of each endpoint applies its events, in a lane per CPU)")
	flag.BoolVar(&cfg.laneTables, "lane-tables", false, "a table per writer or lane: writers share no table, and a query searches one table per lane (faster events, slower queries)")
	flag.BoolVar(&cfg.demo, "demo", false, "also run a built-in engine that publishes synthetic events on loopback")
	flag.StringVar(&cfg.predict, "predict", "auto", "record each /route decision as a prediction: on, off, or auto (on when there is no -endpoint nor -demo)")
	flag.DurationVar(&cfg.predictTTL, "predict-ttl", flash.DefaultPredictionTTL, "how long a recorded decision lasts")
	flag.StringVar(&cfg.nats.url, "nats", "", "run as a replica of a JetStream stream of events (flash/scaleout): NATS URLs, comma-separated")
	flag.StringVar(&cfg.nats.stream, "nats-stream", "KV", "the stream of events")
	flag.StringVar(&cfg.nats.bucket, "nats-snapshots", "", "object-store bucket of snapshots: start from the newest, and take one every -snapshot-every")
	flag.DurationVar(&cfg.nats.every, "snapshot-every", time.Minute, "snapshot period (keep the stream's messages longer)")
	flag.Func("fleet", "workers /route may choose when nothing matches: ID[:RANK],... (needed to route on predictions alone)", func(v string) (err error) {
		cfg.fleet, err = parseFleet(v)
		return err
	})
	cfg.limits = defaultLimits()
	flag.IntVar(&cfg.maxTokens, "max-tokens", cfg.maxTokens, "most tokens in one /route request (413 past it; the body may hold 11 bytes a token)")
	flag.IntVar(&cfg.maxInFlight, "max-inflight", cfg.maxInFlight, "most /route requests read and answered at once (503 after -busy-wait)")
	flag.DurationVar(&cfg.busyWait, "busy-wait", cfg.busyWait, "how long a /route request waits for its turn")
	flag.DurationVar(&cfg.readTimeout, "read-timeout", cfg.readTimeout, "time a client has to send a whole request")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(cfg, log); err != nil {
		log.Error("flashroute", "err", err)
		os.Exit(1)
	}
}

func run(cfg config, log *slog.Logger) error {
	s, err := newServer(cfg, log)
	if err != nil {
		return err
	}
	defer s.close()
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return err
	}
	srv := s.httpServer()
	log.Info("serving", "addr", ln.Addr().String())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shut)
}
