package scaleout

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/flash"
)

// BenchmarkRelayToReplica: blocks per second from a relay (publishing
// without waiting for each acknowledgement) through JetStream on files into
// one replica's index, drain-inclusive: the clock stops when the replica
// has applied the last event. Server, relay and replica share the machine.
// A message carries one event, or an engine batch of 16.
func BenchmarkRelayToReplica(b *testing.B) {
	for _, batch := range []int{1, 16} {
		b.Run(fmt.Sprintf("events-per-msg=%d", batch), func(b *testing.B) { benchRelay(b, batch) })
	}
}

func benchRelay(b *testing.B, batch int) {
	var err error
	s := startServer(b, b.TempDir(), -1)
	defer s.Shutdown()
	js := connect(b, s.ClientURL())
	wl := newWorkload(4000)
	blocks := 0
	for _, ev := range wl.events {
		blocks += len(ev.Blocks) + len(ev.Hashes)
	}
	ctx := context.Background()
	round := 0
	for b.Loop() {
		b.StopTimer()
		name := "KV" + string(rune('A'+round%26))
		round++
		_ = js.DeleteStream(ctx, name)
		newStream(b, js, StreamConfig(name, "kv"+name, 0, 0))
		ix := flash.New(flash.WithWriters(1))
		r := NewReplica(js, name, ix)
		stop := runReplica(b, r)
		relay := NewRelay(js, "kv"+name)
		b.StartTimer()
		for i := 0; i < len(wl.events); i += batch {
			if batch == 1 {
				_, err = relay.PublishAsync(MsgID("engine", uint64(i), 0), &wl.events[i])
			} else {
				_, err = relay.PublishBatch(MsgID("engine", uint64(i), 0), wl.events[i:min(i+batch, len(wl.events))])
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		<-js.PublishAsyncComplete()
		for r.Applied() < uint64((len(wl.events)+batch-1)/batch) {
			time.Sleep(100 * time.Microsecond)
		}
		ix.Flush()
		b.StopTimer()
		stop()
		_ = ix.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.N*blocks)/b.Elapsed().Seconds(), "blocks/s")
	b.ReportMetric(float64(b.N*len(wl.events))/b.Elapsed().Seconds(), "events/s")
}
