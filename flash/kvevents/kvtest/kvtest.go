// Package kvtest is a stand-in for an inference engine's KV-event
// publisher, for tests: it speaks vLLM's wire format (ZMQ PUB frames
// [topic, sequence number, msgpack batch], and a ROUTER replay socket) and
// can drop batches and restart like a real engine.
package kvtest

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log"
	"sync"

	"github.com/go-zeromq/zmq4"
	"github.com/vmihailenco/msgpack/v5"
)

// Stored returns a BlockStored event as vLLM encodes it: [tag, block_hashes,
// parent_block_hash, token_ids, block_size, lora_id, medium, lora_name].
// Hashes and parent may be any value the format allows (uint64, int64,
// []byte, nil for no parent), tokens normally a []uint32; extra adds trailing fields after block_size
// (lora_id, medium, lora_name and beyond).
func Stored(hashes, parent, tokens any, blockSize int, extra ...any) []any {
	return append([]any{"BlockStored", hashes, parent, tokens, blockSize}, extra...)
}

// Removed returns a BlockRemoved event: [tag, block_hashes, extra...] (medium, …).
func Removed(hashes any, extra ...any) []any {
	return append([]any{"BlockRemoved", hashes}, extra...)
}

// Cleared returns an AllBlocksCleared event: [tag].
func Cleared() []any { return []any{"AllBlocksCleared"} }

// Encode returns the msgpack payload [ts, [events…], dpRank]; dpRank nil
// encodes a nil rank, and omitRank leaves the field out as older engines do.
func Encode(ts float64, events []any, dpRank any, omitRank bool) []byte {
	b := []any{ts, events}
	if !omitRank {
		b = append(b, dpRank)
	}
	p, err := msgpack.Marshal(b)
	if err != nil {
		panic(err) // only values this package builds are encoded
	}
	return p
}

// Publisher is one engine's event publisher on loopback.
type Publisher struct {
	topic  string
	replay bool
	keep   int

	mu        sync.Mutex
	addr      string // PUB endpoint
	replayEP  string // ROUTER endpoint, or ""
	pub       zmq4.Socket
	router    zmq4.Socket
	cancel    context.CancelFunc
	done      sync.WaitGroup
	seq       uint64
	buf       []record // the last keep batches, for replay
	closed    bool
	requested []uint64 // start sequence numbers of replay requests served
}

type record struct {
	seq     uint64
	payload []byte
}

// Options configure a Publisher.
type Options struct {
	Topic  string // topic frame of every message
	Replay bool   // serve a ROUTER replay socket
	Keep   int    // batches kept for replay (default 1000)
	// Addr is the PUB endpoint to bind (default "tcp://127.0.0.1:0", a
	// free port); the replay socket always takes a free port.
	Addr string
}

var quiet = log.New(io.Discard, "", 0)

// NewPublisher binds a PUB socket (and a replay ROUTER) on 127.0.0.1 at
// free ports.
func NewPublisher(o Options) (*Publisher, error) {
	p := &Publisher{topic: o.Topic, replay: o.Replay, keep: o.Keep}
	if p.keep <= 0 {
		p.keep = 1000
	}
	addr := o.Addr
	if addr == "" {
		addr = "tcp://127.0.0.1:0"
	}
	if err := p.bind(addr, "tcp://127.0.0.1:0"); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Publisher) bind(pubEP, replayEP string) error {
	ctx, cancel := context.WithCancel(context.Background())
	pub := zmq4.NewPub(ctx, zmq4.WithLogger(quiet))
	if err := pub.Listen(pubEP); err != nil {
		cancel()
		return err
	}
	p.pub, p.cancel = pub, cancel
	p.addr = "tcp://" + pub.Addr().String()
	if p.replay {
		r := zmq4.NewRouter(ctx, zmq4.WithLogger(quiet))
		if err := r.Listen(replayEP); err != nil {
			pub.Close()
			cancel()
			return err
		}
		p.router = r
		p.replayEP = "tcp://" + r.Addr().String()
		p.done.Add(1)
		go p.serve(r)
	}
	return nil
}

// Addr is the PUB endpoint; ReplayAddr the ROUTER's ("" without replay).
func (p *Publisher) Addr() string { p.mu.Lock(); defer p.mu.Unlock(); return p.addr }

// ReplayAddr is the replay endpoint, "" when the publisher has none.
func (p *Publisher) ReplayAddr() string { p.mu.Lock(); defer p.mu.Unlock(); return p.replayEP }

// Requests returns the start sequence numbers of the replay requests served.
func (p *Publisher) Requests() []uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]uint64(nil), p.requested...)
}

// serve answers replay requests [id, empty, start] with [id, empty, seq,
// payload] for every kept batch from start on, then the end marker [id,
// empty, -1, empty].
func (p *Publisher) serve(r zmq4.Socket) {
	defer p.done.Done()
	end := make([]byte, 8)
	binary.BigEndian.PutUint64(end, ^uint64(0))
	for {
		msg, err := r.Recv()
		if err != nil {
			return
		}
		f := msg.Frames
		if len(f) != 3 || len(f[2]) != 8 {
			continue
		}
		id, start := f[0], binary.BigEndian.Uint64(f[2])
		p.mu.Lock()
		p.requested = append(p.requested, start)
		recs := append([]record(nil), p.buf...)
		p.mu.Unlock()
		for _, rec := range recs {
			if rec.seq < start {
				continue
			}
			var s [8]byte
			binary.BigEndian.PutUint64(s[:], rec.seq)
			if r.SendMulti(zmq4.NewMsgFrom(id, []byte{}, s[:], rec.payload)) != nil {
				return
			}
		}
		if r.SendMulti(zmq4.NewMsgFrom(id, []byte{}, end, []byte{})) != nil {
			return
		}
	}
}

// ErrClosed: the publisher is closed.
var ErrClosed = errors.New("kvtest: publisher closed")

// Send publishes payload as the next batch and returns its sequence number.
func (p *Publisher) Send(payload []byte) (uint64, error) { return p.emit(payload, true) }

// Drop numbers and keeps payload like Send but never sends it: the
// subscriber sees a gap, which the replay socket (if any) can fill.
func (p *Publisher) Drop(payload []byte) (uint64, error) { return p.emit(payload, false) }

func (p *Publisher) emit(payload []byte, send bool) (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, ErrClosed
	}
	seq := p.seq
	p.seq++
	p.buf = append(p.buf, record{seq, payload})
	if len(p.buf) > p.keep {
		p.buf = append(p.buf[:0], p.buf[len(p.buf)-p.keep:]...)
	}
	if !send {
		return seq, nil
	}
	var s [8]byte
	binary.BigEndian.PutUint64(s[:], seq)
	return seq, p.pub.SendMulti(zmq4.NewMsgFrom([]byte(p.topic), s[:], payload))
}

// Forget empties the replay buffer, as if the engine had kept no history.
func (p *Publisher) Forget() {
	p.mu.Lock()
	p.buf = p.buf[:0]
	p.mu.Unlock()
}

// Restart stops the sockets (subscribers lose the connection) and binds
// again on the same ports with a new sequence from 0 and no history, as an
// engine that restarted.
func (p *Publisher) Restart() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	p.stop()
	p.seq, p.buf = 0, nil
	return p.bind(p.addr, p.replayEP)
}

func (p *Publisher) stop() {
	p.cancel()
	p.pub.Close()
	if p.router != nil {
		p.router.Close()
	}
	p.mu.Unlock()
	p.done.Wait()
	p.mu.Lock()
}

// Close stops the publisher.
func (p *Publisher) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	p.stop()
}
