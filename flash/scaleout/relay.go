package scaleout

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/flashindexer/flashindexer/flash"
)

// StreamConfig returns a stream for events under subjects prefix.> kept
// for maxAge (0: for ever), with a duplicate window of dup (0: JetStream's
// two minutes), on files: what EnsureStream creates.
func StreamConfig(name, prefix string, maxAge, dup time.Duration) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:       name,
		Subjects:   []string{prefix + ".>"},
		Storage:    jetstream.FileStorage,
		MaxAge:     maxAge,
		Duplicates: dup,
	}
}

// EnsureStream creates the stream, or updates it to cfg.
func EnsureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	return js.CreateOrUpdateStream(ctx, cfg)
}

// MsgID is the message ID of event i of the batch an endpoint numbered seq:
// the same event published twice gets the same ID.
func MsgID(endpoint string, seq uint64, i int) string {
	return endpoint + "/" + strconv.FormatUint(seq, 10) + "/" + strconv.Itoa(i)
}

// Relay publishes events to a stream. It is not safe for concurrent use:
// give each goroutine (each endpoint's) its own.
type Relay struct {
	js     jetstream.JetStream
	prefix string
	msg    nats.Msg
	buf    []byte
}

// NewRelay returns a relay publishing under subjects prefix.<worker>.<rank>.
func NewRelay(js jetstream.JetStream, prefix string) *Relay {
	return &Relay{js: js, prefix: prefix, msg: nats.Msg{Header: nats.Header{}}}
}

// Publish publishes ev with message ID id (MsgID) and returns its stream
// sequence; a duplicate within the window returns the first copy's. It
// waits for the acknowledgement until ctx is done: a message that reached a
// node as it stopped gets none, so give each try its own deadline and try
// again with the same id, which the stream keeps once.
func (r *Relay) Publish(ctx context.Context, id string, ev *flash.Event) (uint64, error) {
	r.buf = AppendEvent(r.buf[:0], ev)
	r.msg.Subject = r.subject(ev)
	r.msg.Data = r.buf
	r.msg.Header.Set(jetstream.MsgIDHeader, id)
	ack, err := r.js.PublishMsg(ctx, &r.msg)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// PublishAsync publishes ev with message ID id without waiting for the
// stream's acknowledgement (js.PublishAsyncComplete waits for them all);
// the message has a copy of the event of its own.
func (r *Relay) PublishAsync(id string, ev *flash.Event) (jetstream.PubAckFuture, error) {
	m := &nats.Msg{
		Subject: r.subject(ev),
		Data:    AppendEvent(nil, ev),
		Header:  nats.Header{jetstream.MsgIDHeader: []string{id}},
	}
	return r.js.PublishMsgAsync(m)
}

// subject is ev's worker's subject.
func (r *Relay) subject(ev *flash.Event) string {
	return r.prefix + "." + strconv.FormatUint(ev.Worker.ID, 10) + "." + strconv.FormatUint(uint64(ev.Worker.DPRank), 10)
}

// PublishBatch publishes the events of one engine batch as one message with
// message ID id (MsgID with i = 0), on the first event's worker's subject,
// without waiting for the stream's acknowledgement.
func (r *Relay) PublishBatch(id string, evs []flash.Event) (jetstream.PubAckFuture, error) {
	m := &nats.Msg{
		Subject: r.subject(&evs[0]),
		Data:    AppendBatch(nil, evs),
		Header:  nats.Header{jetstream.MsgIDHeader: []string{id}},
	}
	return r.js.PublishMsgAsync(m)
}

// Forward publishes one engine batch (as flash/kvevents' WithForward hands
// them over) as one message and waits for the stream's acknowledgement. A
// batch is named by its endpoint, sequence number and engine timestamp, so
// the same batch published again (a relay that restarted and replays) is
// kept once, while an engine that restarted, numbering from 0 again, is
// not taken for a duplicate; a resync's Cleared events (harmless twice)
// carry no name.
func (r *Relay) Forward(ctx context.Context, endpoint string, seq uint64, ts float64, resync bool, evs []flash.Event) error {
	m := &nats.Msg{Subject: r.subject(&evs[0]), Data: AppendBatch(r.buf[:0], evs), Header: nats.Header{}}
	if !resync {
		m.Header.Set(jetstream.MsgIDHeader, MsgID(endpoint+"@"+strconv.FormatUint(math.Float64bits(ts), 16), seq, 0))
	}
	_, err := r.js.PublishMsg(ctx, m)
	r.buf = m.Data
	return err
}
