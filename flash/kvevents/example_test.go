package kvevents_test

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/kvevents"
	"github.com/flashindexer/flashindexer/flash/kvevents/flashprom"
	"github.com/flashindexer/flashindexer/flash/kvevents/kvtest"
)

// The README's engine events: an index subscribed to an engine's KV events
// (here a stand-in engine on loopback that speaks vLLM's protocol), its
// counters exported to Prometheus.
func Example() {
	engine, _ := kvtest.NewPublisher(kvtest.Options{Replay: true}) // a real engine: docs/ENGINES.md
	defer engine.Close()

	idx := flash.New(flash.WithBlockSize(4))
	defer idx.Close()
	sub := kvevents.New(idx)
	defer sub.Close()
	_ = sub.Subscribe(kvevents.Endpoint{Addr: engine.Addr(), Replay: engine.ReplayAddr(), Worker: 7})
	prometheus.MustRegister(flashprom.New(idx, flashprom.WithSubscriber(sub)))

	// The engine caches a prompt's two blocks (its ids 100 and 101) and
	// publishes it; the subscriber hashes the tokens as TokenHasher does.
	prompt := []uint32{1, 2, 3, 4, 5, 6, 7, 8}
	_, _ = engine.Send(kvtest.Encode(0, []any{kvtest.Stored([]uint64{100, 101}, nil, prompt, 4)}, 0, false))
	for end := time.Now().Add(10 * time.Second); idx.BlockCount(flash.Worker{ID: 7}) < 2 && time.Now().Before(end); {
		time.Sleep(time.Millisecond) // events arrive on their own time
	}

	var q flash.Query
	flash.NewTokenHasher(4, "").Query(&q, prompt)
	var scores flash.Scores
	idx.FindMatches(q, &scores)
	best, _ := scores.Best()
	fmt.Println(best.Worker.ID, best.Depth)
	// Output: 7 2
}
