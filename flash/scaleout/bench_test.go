package scaleout

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/scaleout/natstest"
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
	s := natstest.Server(b, b.TempDir(), -1)
	js := natstest.Connect(b, s.ClientURL())
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

// BenchmarkRelayLag: event lag from a relay's publish to the replica's
// apply, p50 and p99, with engine batches of 16 events published at a
// steady 1M blocks/s (about half what the pipeline carries here).
func BenchmarkRelayLag(b *testing.B) {
	const batch, rate = 16, 1e6 // events per message, blocks/s
	s := natstest.Server(b, b.TempDir(), -1)
	js := natstest.Connect(b, s.ClientURL())
	wl := newWorkload(8000)
	var lags []time.Duration
	round := 0
	for b.Loop() {
		name := fmt.Sprintf("LAG%d", round)
		round++
		newStream(b, js, StreamConfig(name, "lag"+name, 0, 0))
		ix := flash.New(flash.WithWriters(1))
		r := NewReplica(js, name, ix)
		stop := runReplica(b, r)
		relay := NewRelay(js, "lag"+name)
		nmsg := (len(wl.events) + batch - 1) / batch
		sent := make([]time.Time, nmsg)
		done := make(chan struct{})
		go func() { // when each message is applied
			defer close(done)
			for k := 0; k < nmsg; {
				if a := int(r.Applied()); a > k {
					now := time.Now()
					for ; k < a; k++ {
						lags = append(lags, now.Sub(sent[k]))
					}
					continue
				}
				time.Sleep(20 * time.Microsecond)
			}
		}()
		start := time.Now()
		blocks := 0
		for k := range nmsg {
			evs := wl.events[k*batch : min((k+1)*batch, len(wl.events))]
			for _, ev := range evs {
				blocks += len(ev.Blocks) + len(ev.Hashes)
			}
			if d := time.Until(start.Add(time.Duration(float64(blocks) / rate * 1e9))); d > 0 {
				time.Sleep(d)
			}
			sent[k] = time.Now()
			if _, err := relay.PublishBatch(MsgID("engine", uint64(k), 0), evs); err != nil {
				b.Fatal(err)
			}
		}
		<-done
		stop()
		_ = ix.Close()
	}
	slices.Sort(lags)
	b.ReportMetric(float64(lags[len(lags)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lags[len(lags)*99/100].Microseconds()), "p99-µs")
}
