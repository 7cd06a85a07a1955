// Command flashroute subscribes a flash index to inference engines' KV
// events over ZMQ and serves /metrics (Prometheus) and /route, which answers
// "which workers hold the longest prefix of these tokens".
//
//	go run ./cmd/flashroute -endpoint tcp://10.0.0.7:5557,replay=tcp://10.0.0.7:5558 -listen :8080
//	go run ./cmd/flashroute -demo     # a built-in engine publishes synthetic events
//
//	curl -s localhost:8080/route -d '{"tokens":[1,2,3,...],"lora":""}'
//
// An -endpoint is ADDR[,replay=ADDR][,topic=T][,worker=ID][,dp=RANK][,ranks=N]:
// ranks=N subscribes N data-parallel ranks on consecutive ports (vLLM's
// layout), all under one worker ID.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
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
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/kvevents"
	"github.com/flashindexer/flashindexer/flash/kvevents/flashprom"
	"github.com/flashindexer/flashindexer/flash/kvevents/kvtest"
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
}

// server holds the index, the subscriber and the HTTP handlers.
type server struct {
	ix   *flash.Indexer
	sub  *kvevents.Subscriber
	prom *flashprom.Collector
	reg  *prometheus.Registry
	mux  *http.ServeMux
	pool sync.Pool // *routeScratch
	stop []func()
}

type routeScratch struct {
	q  flash.Query
	sc flash.Scores
}

func newServer(cfg config, log *slog.Logger) (*server, error) {
	// With no writers, the subscriber's goroutines (one per endpoint) apply
	// the events themselves, in a lane per CPU.
	s := &server{ix: flash.New(flash.WithBlockSize(cfg.blockSize), flash.WithWriters(cfg.writers), flash.WithSyncLanes(runtime.GOMAXPROCS(0)), flash.WithLaneTables(cfg.laneTables))}
	s.sub = kvevents.New(s.ix, kvevents.WithLogger(log), kvevents.WithResyncHandler(func(r kvevents.Resync) {
		log.Warn("workers cleared", "endpoint", r.Endpoint, "reason", r.Reason.String(), "lost_from", r.From, "lost_to", r.To, "workers", len(r.Cleared))
	}))
	s.prom = flashprom.New(s.ix, flashprom.WithSubscriber(s.sub))
	s.reg = prometheus.NewRegistry()
	s.reg.MustRegister(s.prom, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.pool.New = func() any { return new(routeScratch) }
	eps := cfg.endpoints
	if cfg.demo {
		ep, stop, err := startDemo(cfg.blockSize)
		if err != nil {
			return nil, err
		}
		s.stop = append(s.stop, stop)
		eps = append(eps, ep)
	}
	if len(eps) == 0 {
		return nil, errors.New("no -endpoint (or -demo) given")
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
}

type routeMatch struct {
	Worker uint64 `json:"worker"`
	DPRank uint32 `json:"dp_rank"`
	Depth  int    `json:"depth"`
	Tokens int    `json:"tokens"`
	Blocks int    `json:"blocks"`
}

type routeResponse struct {
	Blocks  int          `json:"blocks"`  // full blocks in the request
	Matches []routeMatch `json:"matches"` // best first: deepest, then fewest blocks held
}

// route answers which workers hold the longest prefix of the tokens.
func (s *server) route(w http.ResponseWriter, r *http.Request) {
	var req routeRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20)).Decode(&req); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	x := s.pool.Get().(*routeScratch)
	defer s.pool.Put(x)
	flash.NewTokenHasher(s.ix.Config().BlockSize, req.LoRA).Query(&x.q, req.Tokens)
	s.prom.FindMatches(x.q, &x.sc)
	x.sc.Sort()
	resp := routeResponse{Blocks: len(x.q.Locals), Matches: make([]routeMatch, 0, len(x.sc.Matches))}
	for _, m := range x.sc.Matches {
		resp.Matches = append(resp.Matches, routeMatch{Worker: m.Worker.ID, DPRank: m.Worker.DPRank, Depth: m.Depth, Tokens: m.Tokens, Blocks: m.Blocks})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// startDemo runs a stand-in engine on loopback: four DP ranks' worth of
// requests over a small pool of prompts with shared prefixes, stored and
// evicted as a cache under pressure would, a batch every 10 ms.
func startDemo(blockSize int) (kvevents.Endpoint, func(), error) {
	pub, err := kvtest.NewPublisher(kvtest.Options{Replay: true})
	if err != nil {
		return kvevents.Endpoint{}, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(1, 2))
		prompts := demoPrompts(rng, blockSize)
		held := make([]map[int]int, 4) // per rank: prompt -> blocks held
		for i := range held {
			held[i] = map[int]int{}
		}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rank := i % len(held)
			var events []any
			pi := rng.IntN(len(prompts))
			p := prompts[pi]
			if from, n := held[rank][pi], len(p)/blockSize; from < n {
				var hashes []uint64
				for b := from; b < n; b++ {
					hashes = append(hashes, demoHash(p[:(b+1)*blockSize]))
				}
				var parent any
				if from > 0 {
					parent = demoHash(p[:from*blockSize])
				}
				events = append(events, kvtest.Stored(hashes, parent, p[from*blockSize:n*blockSize], blockSize, nil, "GPU"))
				held[rank][pi] = n
			}
			if len(held[rank]) > 6 { // evict a whole prompt, deepest block first
				for pj, d := range held[rank] {
					if pj == pi {
						continue
					}
					var hashes []uint64
					for b := d; b > 0; b-- {
						hashes = append(hashes, demoHash(prompts[pj][:b*blockSize]))
					}
					events = append(events, kvtest.Removed(hashes, "GPU"))
					delete(held[rank], pj)
					break
				}
			}
			if len(events) == 0 {
				continue
			}
			_, _ = pub.Send(kvtest.Encode(float64(time.Now().UnixNano())/1e9, events, rank, false))
		}
	}()
	stop := func() { cancel(); <-done; pub.Close() }
	return kvevents.Endpoint{Addr: pub.Addr(), Replay: pub.ReplayAddr(), Worker: 1}, stop, nil
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
	flag.IntVar(&cfg.writers, "writers", flash.DefaultWriters(), "index writer goroutines (0: the subscriber's goroutine of each endpoint applies its events, in a lane per CPU)")
	flag.BoolVar(&cfg.laneTables, "lane-tables", false, "a table per writer or lane: writers share no table, and a query searches one table per lane (faster events, slower queries)")
	flag.BoolVar(&cfg.demo, "demo", false, "also run a built-in engine that publishes synthetic events on loopback")
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
	srv := &http.Server{Handler: s.mux, ReadHeaderTimeout: 5 * time.Second}
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
