package kvevents

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/scaleout"
	"github.com/flashindexer/flashindexer/flash/scaleout/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// An engine's events through a relay (WithForward into scaleout's Relay),
// JetStream and a replica reach the replica's index as they reach the
// model; a relay that restarts and replays the engine's history from 0
// publishes nothing twice.
func TestForward_ThroughJetStream(t *testing.T) {
	ns := natstest.Server(t, t.TempDir(), -1)
	js := natstest.Connect(t, ns.ClientURL())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := scaleout.EnsureStream(ctx, js, scaleout.StreamConfig("KV", "kv", 0, time.Hour))
	if err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(9, 10))
	wl := newWorkload(rng, 20)
	m := newModel()
	s := newSource(t, wl, true, Endpoint{Worker: 11}, 2, 41, func(r int) (any, bool) { return r, false })
	send := func(n int) {
		for range n {
			payload, _, want := s.batch()
			if _, err := s.pub.Send(payload); err != nil {
				t.Fatal(err)
			}
			for _, ev := range want {
				_ = m.Apply(ev)
			}
		}
	}
	send(30) // history, before the relay listens

	ix := flash.New(flash.WithBlockSize(testBlock), flash.WithWriters(1))
	defer ix.Close()
	rep := scaleout.NewReplica(js, "KV", ix)
	go func() { _ = rep.Run(ctx) }()

	relay := func() *Subscriber {
		r := scaleout.NewRelay(js, "kv")
		local := flash.New(flash.WithBlockSize(testBlock), flash.WithWriters(0))
		t.Cleanup(func() { _ = local.Close() })
		sub := New(local, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), WithForward(func(f *Forwarded) {
			if err := r.Forward(ctx, f.Endpoint, f.Seq, f.TS, f.Resync, f.Events); err != nil {
				t.Errorf("forward: %v", err)
			}
		}))
		if err := sub.Subscribe(s.ep); err != nil {
			t.Fatal(err)
		}
		return sub
	}
	sub := relay()
	send(30) // live
	eventually(t, 10*time.Second, "the replica caught up", func() string {
		ix.Flush()
		return compare(ix, m, wl, s.workers)
	})
	if matched(m, wl) == 0 {
		t.Fatal("no prompt matches: the comparison shows nothing")
	}
	// The replica can match the model before the stream holds the last
	// batches (a batch may change nothing the comparison sees): the count
	// is read once every batch sent is in, a message each.
	msgs := streamHolds(t, ctx, stream, 60)

	// The relay restarts: the new one replays the engine's history from 0.
	_ = sub.Close()
	sub = relay()
	defer sub.Close()
	time.Sleep(200 * time.Millisecond) // the replay is forwarded
	send(10)
	eventually(t, 10*time.Second, "the replica caught up again", func() string {
		ix.Flush()
		return compare(ix, m, wl, s.workers)
	})
	streamHolds(t, ctx, stream, msgs+10)
	time.Sleep(200 * time.Millisecond) // a replay published again would be in by now
	if info, _ := stream.Info(ctx); info.State.Msgs != msgs+10 {
		t.Fatalf("the stream holds %d messages after 10 more batches, was %d: the replay was published again", info.State.Msgs, msgs)
	}
}

// streamHolds waits until the stream holds at least n messages, and
// returns how many it holds.
func streamHolds(t *testing.T, ctx context.Context, stream jetstream.Stream, n uint64) uint64 {
	t.Helper()
	var got uint64
	eventually(t, 10*time.Second, "the stream took every batch", func() string {
		info, err := stream.Info(ctx)
		if err != nil {
			return err.Error()
		}
		if got = info.State.Msgs; got < n {
			return fmt.Sprintf("%d messages, want %d", got, n)
		}
		return ""
	})
	return got
}
