package scaleout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/flashindexer/flashindexer/flash"
)

// Index is what a replica feeds: a flash index that can be dumped and
// restored (flash.Indexer).
type Index interface {
	flash.Index
	Dump(w io.Writer, workers ...flash.Worker) (int, error)
	Restore(r io.Reader) error
}

// ErrSnapshotTooOld: the stream no longer holds the message after the
// snapshot's; the events between are lost to this replica. Keep messages
// longer than the snapshot period (StreamConfig's maxAge), or snapshot more
// often.
var ErrSnapshotTooOld = errors.New("scaleout: the stream no longer holds the messages after the snapshot")

// ErrSnapshotOtherStream: the snapshot covers another stream than the one
// the replica reads (another name, or a stream deleted and created again
// under it, whose sequences start over), or names none. Its state is not
// this stream's: start from the stream, or from a snapshot of it.
var ErrSnapshotOtherStream = errors.New("scaleout: the snapshot covers another stream")

// ErrSnapshotAhead: the snapshot covers messages past the stream's last, so
// the stream cannot be the one it was taken from.
var ErrSnapshotAhead = errors.New("scaleout: the snapshot is ahead of the stream")

// snapshotName is the object holding a replica's newest snapshot; seqKey,
// in its metadata, the stream sequence it covers, and streamKey the
// stream's identity (streamID).
const (
	snapshotName = "snapshot"
	seqKey       = "stream-seq"
	streamKey    = "stream"
)

// streamID names one stream for good: its name and the time it was
// created, which a stream deleted and created again under the same name
// does not share.
func streamID(info *jetstream.StreamInfo) string {
	return info.Config.Name + "@" + info.Created.UTC().Format(time.RFC3339Nano)
}

// Replica applies a stream's events to its index in order.
type Replica struct {
	js      jetstream.JetStream
	stream  string
	idx     Index
	mu      sync.Mutex // held while an event applies, and while a snapshot is taken
	applied atomic.Uint64
	bad     atomic.Uint64
	ev      flash.Event
	// id is the identity (streamID) of the stream whose messages the index
	// holds: set by Restore, or by Run when it starts the stream afresh.
	id atomic.Pointer[string]
}

// NewReplica returns a replica of stream feeding idx, from its start.
func NewReplica(js jetstream.JetStream, stream string, idx Index) *Replica {
	return &Replica{js: js, stream: stream, idx: idx}
}

// Applied returns the stream sequence of the last message applied.
func (r *Replica) Applied() uint64 { return r.applied.Load() }

// Malformed returns how many messages did not decode (skipped).
func (r *Replica) Malformed() uint64 { return r.bad.Load() }

// Run consumes the stream from the message after Applied until ctx ends,
// through an ordered consumer, which the client recreates from where it
// stopped after a disconnection.
func (r *Replica) Run(ctx context.Context) error {
	if r.id.Load() == nil {
		info, err := r.streamInfo(ctx)
		if err != nil {
			return err
		}
		id := streamID(info)
		r.id.CompareAndSwap(nil, &id)
	}
	cons, err := r.js.OrderedConsumer(ctx, r.stream, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:   r.applied.Load() + 1,
	})
	if err != nil {
		return err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		meta, err := m.Metadata()
		if err != nil {
			return
		}
		r.apply(meta.Sequence.Stream, m.Data())
	})
	if err != nil {
		return err
	}
	<-ctx.Done()
	cc.Stop()
	return nil
}

// apply applies the message at stream sequence seq, once.
func (r *Replica) apply(seq uint64, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if seq <= r.applied.Load() {
		return // delivered again after a reconnection
	}
	if DecodeBatch(data, &r.ev, r.applyEvent) != nil {
		r.bad.Add(1)
	}
	r.applied.Store(seq)
}

// applyEvent applies one decoded event; rejections are counted in the
// index's Stats.
func (r *Replica) applyEvent(ev *flash.Event) { _ = r.idx.Apply(*ev) }

// CaughtUp reports whether the replica applied every message the stream
// held when asked.
func (r *Replica) CaughtUp(ctx context.Context) (bool, error) {
	info, err := r.streamInfo(ctx)
	if err != nil {
		return false, err
	}
	return r.applied.Load() >= info.State.LastSeq, nil
}

// streamInfo asks the server for the stream's identity and state.
func (r *Replica) streamInfo(ctx context.Context) (*jetstream.StreamInfo, error) {
	s, err := r.js.Stream(ctx, r.stream)
	if err != nil {
		return nil, err
	}
	return s.Info(ctx)
}

// Snapshot stores the index's Dump, with the stream sequence it covers and
// the stream's identity, as the newest snapshot in store. Events wait
// while it is taken.
func (r *Replica) Snapshot(ctx context.Context, store jetstream.ObjectStore) (uint64, error) {
	if r.id.Load() == nil {
		info, err := r.streamInfo(ctx)
		if err != nil {
			return 0, err
		}
		id := streamID(info)
		r.id.CompareAndSwap(nil, &id)
	}
	r.mu.Lock()
	r.idx.Flush()
	var buf bytes.Buffer
	_, err := r.idx.Dump(&buf)
	seq := r.applied.Load()
	r.mu.Unlock()
	if err != nil {
		return 0, err
	}
	meta := map[string]string{seqKey: strconv.FormatUint(seq, 10), streamKey: *r.id.Load()}
	_, err = store.Put(ctx, jetstream.ObjectMeta{Name: snapshotName, Metadata: meta}, &buf)
	return seq, err
}

// SnapshotEvery takes a snapshot into store every period until ctx ends,
// calling report (if not nil) with each one's sequence or error.
func (r *Replica) SnapshotEvery(ctx context.Context, store jetstream.ObjectStore, period time.Duration, report func(seq uint64, err error)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		seq, err := r.Snapshot(ctx, store)
		if report != nil {
			report(seq, err)
		}
	}
}

// Restore loads the newest snapshot in store into the index and makes Run
// start after the sequence it covers. With no snapshot it changes nothing
// and returns jetstream.ErrObjectNotFound. A snapshot of another stream
// (or of one deleted and created again under its name) is refused with
// ErrSnapshotOtherStream, one past the stream's last message with
// ErrSnapshotAhead, and one whose next message the stream no longer holds
// with ErrSnapshotTooOld; each changes nothing.
func (r *Replica) Restore(ctx context.Context, store jetstream.ObjectStore) error {
	obj, err := store.Get(ctx, snapshotName) // its data and metadata, of one version
	if err != nil {
		return err
	}
	defer obj.Close()
	info, err := obj.Info()
	if err != nil {
		return err
	}
	seq, err := strconv.ParseUint(info.Metadata[seqKey], 10, 64)
	if err != nil {
		return fmt.Errorf("scaleout: snapshot without its stream sequence: %w", err)
	}
	si, err := r.streamInfo(ctx)
	if err != nil {
		return err
	}
	id := streamID(si)
	switch got := info.Metadata[streamKey]; {
	case got != id:
		if got == "" {
			got = "none"
		}
		return fmt.Errorf("%w: the snapshot names %s, the stream is %s", ErrSnapshotOtherStream, got, id)
	case seq > si.State.LastSeq:
		return fmt.Errorf("%w: snapshot at %d, the stream ends at %d", ErrSnapshotAhead, seq, si.State.LastSeq)
	}
	if si.State.FirstSeq > seq+1 {
		return fmt.Errorf("%w: snapshot at %d, the stream starts at %d", ErrSnapshotTooOld, seq, si.State.FirstSeq)
	}
	data, err := io.ReadAll(obj)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.idx.Restore(bytes.NewReader(data)); err != nil {
		return err
	}
	r.applied.Store(seq)
	r.id.Store(&id)
	return nil
}
