package kvevents

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/zeebo/xxh3"

	"github.com/flashindexer/flashindexer/flash"
)

// ErrClosed: the Subscriber is closed.
var ErrClosed = errors.New("kvevents: subscriber closed")

// ErrDuplicateEndpoint: the address is subscribed already.
var ErrDuplicateEndpoint = errors.New("kvevents: endpoint subscribed already")

// ErrUnknownEndpoint: the address is not subscribed.
var ErrUnknownEndpoint = errors.New("kvevents: endpoint not subscribed")

// Endpoint is one engine publisher (one DP rank's, when ranks publish on
// port offsets).
type Endpoint struct {
	// Addr is the ZMQ PUB endpoint, e.g. "tcp://10.0.0.7:5557".
	Addr string
	// Replay is the engine's ROUTER replay endpoint, e.g.
	// "tcp://10.0.0.7:5558"; empty when the engine offers none.
	Replay string
	// Topic is the subscription prefix; empty subscribes to everything.
	Topic string
	// Worker is the flash worker ID of the engine; 0 derives it from Addr
	// (XXH3-64 of the string). Give every rank of one engine the same ID
	// (DPEndpoints does) so RemoveWorker drops them all.
	Worker uint64
	// DPRank is the rank of batches that carry none.
	DPRank uint32
}

// WorkerID returns the flash worker ID of e.
func (e Endpoint) WorkerID() uint64 {
	if e.Worker != 0 {
		return e.Worker
	}
	return xxh3.HashString(e.Addr)
}

// DPEndpoints returns the endpoints of ranks data-parallel ranks of one
// engine that publish, as vLLM does, on e's ports plus the rank: rank r on
// Addr's port + r (and Replay's port + r), all with e's worker ID.
func DPEndpoints(e Endpoint, ranks int) ([]Endpoint, error) {
	id := e.WorkerID()
	out := make([]Endpoint, 0, ranks)
	for r := 0; r < ranks; r++ {
		addr, err := offsetPort(e.Addr, r)
		if err != nil {
			return nil, err
		}
		replay := ""
		if e.Replay != "" {
			if replay, err = offsetPort(e.Replay, r); err != nil {
				return nil, err
			}
		}
		out = append(out, Endpoint{Addr: addr, Replay: replay, Topic: e.Topic, Worker: id, DPRank: e.DPRank + uint32(r)})
	}
	return out, nil
}

func offsetPort(addr string, by int) (string, error) {
	u, err := url.Parse(addr)
	if err != nil || u.Scheme != "tcp" || u.Port() == "" {
		return "", fmt.Errorf("kvevents: %q is not a tcp://host:port endpoint", addr)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil || p+by > 65535 {
		return "", fmt.Errorf("kvevents: bad port in %q", addr)
	}
	u.Host = net.JoinHostPort(u.Hostname(), strconv.Itoa(p+by))
	return u.String(), nil
}

type settings struct {
	blockSize     int
	minBackoff    time.Duration
	maxBackoff    time.Duration
	dialTimeout   time.Duration
	replayTimeout time.Duration
	onResync      func(Resync)
	forward       func(*Forwarded)
	media         map[string]flash.Tier // nil: the Translator's default
	log           *slog.Logger
}

// Option configures a Subscriber.
type Option func(*settings)

// WithBlockSize sets the engines' tokens per block. By default it is the
// index's (flash.Indexer.Config), else flash.DefaultBlockSize.
func WithBlockSize(n int) Option { return func(s *settings) { s.blockSize = n } }

// WithMedia sets the tier map: the medium names events may carry (matched
// without regard to case) and the index's tier of each (default: the
// index's tier names, MediaFor). An event of a medium the map does not
// name is refused and counted (ErrUnknownMedium, Stats.UnknownMedium).
func WithMedia(media map[string]flash.Tier) Option { return func(s *settings) { s.media = media } }

// WithBackoff sets the wait before reconnecting: first, doubling up to
// limit, each with ±20% jitter; a successful connection resets it.
// Defaults: 100 ms, 10 s.
func WithBackoff(first, limit time.Duration) Option {
	return func(s *settings) { s.minBackoff, s.maxBackoff = first, limit }
}

// WithDialTimeout bounds one connection attempt (default 5 s).
func WithDialTimeout(d time.Duration) Option { return func(s *settings) { s.dialTimeout = d } }

// WithReplayTimeout bounds one replay request, from dialing the replay
// socket to its end marker (default 5 s).
func WithReplayTimeout(d time.Duration) Option { return func(s *settings) { s.replayTimeout = d } }

// WithResyncHandler sets a function called, on the endpoint's goroutine,
// whenever a stream's workers are cleared (see ResyncReason).
func WithResyncHandler(f func(Resync)) Option { return func(s *settings) { s.onResync = f } }

// Forwarded is one engine batch's translated events, as a stream would
// apply them: its endpoint, the engine's sequence number and timestamp of
// the batch (which name it across replays and apart from the batches of an
// engine's earlier run), or for a resync's Cleared events the first
// sequence number lost.
type Forwarded struct {
	Endpoint string
	Seq      uint64
	TS       float64
	Resync   bool
	Events   []flash.Event // valid during the call only
}

// WithForward hands each endpoint's translated events to f, a batch at a
// time, instead of applying them to the index: a relay to a stream of
// events (flash/scaleout) uses it, naming each message by endpoint and
// sequence. f runs on the endpoint's goroutine. Unsubscribe still removes
// the endpoint's worker from the index.
func WithForward(f func(*Forwarded)) Option { return func(s *settings) { s.forward = f } }

// WithLogger sets where connection changes and dropped input are logged
// (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.log = l } }

// Subscriber feeds an index from engines' ZMQ KV-event publishers: one
// goroutine per endpoint receives its batches in order, detects gaps and
// restarts from the sequence numbers, recovers through the replay socket
// when there is one, and reconnects with backoff.
type Subscriber struct {
	ix     flash.Index
	set    settings
	c      counters
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	zlog   *log.Logger

	mu      sync.Mutex
	streams map[string]*follower
	closed  bool
}

// follower is one subscribed endpoint's goroutine.
type follower struct {
	st     *stream
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a Subscriber that applies events to ix. Add endpoints with
// Subscribe; stop it with Close.
func New(ix flash.Index, opts ...Option) *Subscriber {
	set := settings{
		blockSize:     flash.DefaultBlockSize,
		minBackoff:    100 * time.Millisecond,
		maxBackoff:    10 * time.Second,
		dialTimeout:   5 * time.Second,
		replayTimeout: 5 * time.Second,
	}
	if c, ok := ix.(interface{ Config() flash.Config }); ok {
		set.blockSize = c.Config().BlockSize
		set.media = MediaFor(c.Config().Tiers)
	}
	for _, o := range opts {
		o(&set)
	}
	if set.log == nil {
		set.log = slog.Default()
	}
	set.minBackoff = max(set.minBackoff, time.Millisecond)
	set.maxBackoff = max(set.maxBackoff, set.minBackoff)
	ctx, cancel := context.WithCancel(context.Background())
	return &Subscriber{
		ix: ix, set: set, ctx: ctx, cancel: cancel,
		zlog:    log.New(io.Discard, "", 0),
		streams: map[string]*follower{},
	}
}

// Stats returns the subscriber's counters.
func (s *Subscriber) Stats() Stats { return s.c.snapshot() }

// Subscribe starts following ep. It returns at once; the connection is
// made (and remade) in the background.
func (s *Subscriber) Subscribe(ep Endpoint) error {
	if _, err := url.Parse(ep.Addr); err != nil || ep.Addr == "" {
		return fmt.Errorf("kvevents: bad endpoint %q", ep.Addr)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.streams[ep.Addr] != nil {
		return ErrDuplicateEndpoint
	}
	ctx, cancel := context.WithCancel(s.ctx)
	st := &stream{
		ep: ep, worker: ep.WorkerID(), ix: s.ix, c: &s.c, log: s.set.log,
		onResync: s.set.onResync, forward: s.set.forward, tr: NewTranslator(s.set.blockSize),
	}
	if s.set.media != nil {
		st.tr.SetMedia(s.set.media)
	}
	if ep.Replay != "" {
		st.replay = s.replayer(ctx, ep.Replay)
	}
	f := &follower{st: st, cancel: cancel, done: make(chan struct{})}
	s.streams[ep.Addr] = f
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(f.done)
		s.run(ctx, st)
	}()
	return nil
}

// Unsubscribe stops following the endpoint at addr and waits for its
// goroutine. Its workers then leave the index, after every event of theirs:
// RemoveWorker of its worker ID when no other subscribed endpoint has that
// ID (every DP rank goes and the slots are freed), else a Cleared event for
// each DP rank it published.
func (s *Subscriber) Unsubscribe(addr string) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	f := s.streams[addr]
	if f == nil {
		s.mu.Unlock()
		return ErrUnknownEndpoint
	}
	delete(s.streams, addr)
	shared := false
	for _, o := range s.streams {
		shared = shared || o.st.worker == f.st.worker
	}
	s.mu.Unlock()
	f.cancel()
	<-f.done
	if !shared {
		return s.ix.RemoveWorker(f.st.worker)
	}
	for _, r := range f.st.ranks {
		if err := s.ix.Apply(flash.ClearedEvent(flash.Worker{ID: f.st.worker, DPRank: r})); err != nil {
			return err
		}
	}
	return nil
}

// EndpointState is one subscribed endpoint as it stands.
type EndpointState struct {
	Addr      string
	Worker    uint64
	Connected bool
	// NextSeq is the sequence number expected next; valid when Received.
	NextSeq  uint64
	Received bool
}

// Endpoints returns the state of every subscribed endpoint, by address.
func (s *Subscriber) Endpoints() []EndpointState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]EndpointState, 0, len(s.streams))
	for addr, f := range s.streams {
		out = append(out, EndpointState{Addr: addr, Worker: f.st.worker, Connected: f.st.connected.Load(), NextSeq: f.st.seen.Load(), Received: f.st.live.Load()})
	}
	slices.SortFunc(out, func(a, b EndpointState) int { return strings.Compare(a.Addr, b.Addr) })
	return out
}

// Close stops every endpoint's goroutine and waits for them. Events
// already handed to the index stay there. Later calls return ErrClosed.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return nil
}

// sleep waits d with ±20% jitter; false if ctx ended meanwhile.
func sleep(ctx context.Context, d time.Duration) bool {
	d += time.Duration((rand.Float64()*0.4 - 0.2) * float64(d))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (s *Subscriber) run(ctx context.Context, st *stream) {
	backoff := s.set.minBackoff
	for ctx.Err() == nil {
		sock := zmq4.NewSub(ctx, zmq4.WithDialerMaxRetries(0), zmq4.WithDialerTimeout(s.set.dialTimeout), zmq4.WithLogger(s.zlog))
		err := sock.SetOption(zmq4.OptionSubscribe, st.ep.Topic)
		if err == nil {
			err = sock.Dial(st.ep.Addr)
		}
		if err != nil {
			sock.Close()
			if ctx.Err() != nil {
				return
			}
			s.c.dialFailures.Add(1)
			s.set.log.Debug("kvevents: connect failed", "endpoint", st.ep.Addr, "err", err, "retry_in", backoff)
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, s.set.maxBackoff)
			continue
		}
		s.c.connects.Add(1)
		st.connected.Store(true)
		st.catchUp()
		s.set.log.Info("kvevents: connected", "endpoint", st.ep.Addr)
		backoff = s.set.minBackoff
		for {
			msg, err := sock.Recv()
			if err != nil {
				break
			}
			f := msg.Frames
			if len(f) != 3 || len(f[1]) != 8 {
				s.c.malformed.Add(1)
				continue
			}
			st.receive(binary.BigEndian.Uint64(f[1]), f[2])
		}
		sock.Close()
		st.connected.Store(false)
		if ctx.Err() != nil {
			return
		}
		s.c.disconnects.Add(1)
		s.set.log.Warn("kvevents: connection lost", "endpoint", st.ep.Addr, "retry_in", backoff)
		if !sleep(ctx, backoff) {
			return
		}
	}
}

// endOfReplay is the sequence number of the replay's end marker (-1).
const endOfReplay = ^uint64(0)

// replayer returns the replay client of one endpoint: a DEALER that sends
// [empty, start seq] and reads [empty, seq, payload] replies until the end
// marker (an empty payload).
func (s *Subscriber) replayer(stop context.Context, addr string) replayFunc {
	return func(from uint64, each func(uint64, []byte) bool) error {
		ctx, cancel := context.WithTimeout(stop, s.set.replayTimeout)
		defer cancel()
		d := zmq4.NewDealer(ctx, zmq4.WithDialerMaxRetries(0), zmq4.WithDialerTimeout(s.set.dialTimeout), zmq4.WithLogger(s.zlog))
		defer d.Close()
		if err := d.Dial(addr); err != nil {
			return err
		}
		var req [8]byte
		binary.BigEndian.PutUint64(req[:], from)
		if err := d.SendMulti(zmq4.NewMsgFrom([]byte{}, req[:])); err != nil {
			return err
		}
		for {
			msg, err := d.Recv()
			if err != nil {
				return err
			}
			f := msg.Frames
			if len(f) > 0 && len(f[0]) == 0 {
				f = f[1:]
			}
			if len(f) != 2 || len(f[0]) != 8 {
				s.c.malformed.Add(1)
				return ErrMalformed
			}
			seq := binary.BigEndian.Uint64(f[0])
			if seq == endOfReplay || len(f[1]) == 0 {
				return nil
			}
			if !each(seq, f[1]) {
				return nil
			}
		}
	}
}
