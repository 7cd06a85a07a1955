package flash_test

import (
	"fmt"
	"testing"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
)

func syncFactory(t testing.TB, cfg flash.Config) flash.Index {
	return flash.New(flash.WithConfig(cfg), flash.WithWriters(0))
}

func asyncFactory(writers int) flashtest.Factory {
	return func(t testing.TB, cfg flash.Config) flash.Index {
		return flash.New(flash.WithConfig(cfg), flash.WithWriters(writers), flash.WithQueueSize(64))
	}
}

func TestFlash_ConformanceSync(t *testing.T) { flashtest.Run(t, syncFactory) }

func TestFlash_ConformanceWriters(t *testing.T) {
	for _, w := range []int{1, 3} {
		t.Run(map[int]string{1: "writers=1", 3: "writers=3"}[w], func(t *testing.T) {
			flashtest.Run(t, asyncFactory(w))
		})
	}
}

func TestFlash_ConformanceJumpSizes(t *testing.T) {
	for _, j := range []int{1, 2, 7, 64} {
		t.Run(fmt.Sprintf("jump=%d", j), func(t *testing.T) {
			flashtest.Run(t, func(t testing.TB, cfg flash.Config) flash.Index {
				return flash.New(flash.WithConfig(cfg), flash.WithWriters(0), flash.WithJumpSize(j))
			}, flashtest.Options{RandomOps: 1500})
		})
	}
}

// FuzzFlashWriters is FuzzFlash with two writer goroutines: every answer
// after a Flush must equal the model's.
func FuzzFlashWriters(f *testing.F) {
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d"))
	f.Fuzz(func(t *testing.T, data []byte) { flashtest.FuzzOps(t, asyncFactory(2), data) })
}

// FuzzFlashLaneTables is FuzzFlash on three synchronous lanes with a table
// each.
func FuzzFlashLaneTables(f *testing.F) {
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d"))
	f.Fuzz(func(t *testing.T, data []byte) {
		flashtest.FuzzOps(t, func(t testing.TB, cfg flash.Config) flash.Index {
			return flash.New(flash.WithConfig(cfg), flash.WithWriters(0), flash.WithSyncLanes(3), flash.WithLaneTables(true))
		}, data)
	})
}

// FuzzFlashWide is FuzzFlash with 69 worker slots, the decoded workers'
// past the first 64: sets in two planes. Its second seed has twelve
// workers store one prompt (slots 60–68, the last three refused) and then
// queries it.
func FuzzFlashWide(f *testing.F) {
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d"))
	f.Add([]byte("\x00\x00\x0a\x01\x27\x00\x01\x01\x00\x0a\x01\x27\x00\x01\x02\x00\x0a\x01\x27\x00\x01\x03\x00\x0a\x01\x27\x00\x01\x04\x00\x0a\x01\x27\x00\x01\x05\x00\x0a\x01\x27\x00\x01\x06\x00\x0a\x01\x27\x00\x01\x07\x00\x0a\x01\x27\x00\x01\x08\x00\x0a\x01\x27\x00\x01\x09\x00\x0a\x01\x27\x00\x01\x0a\x00\x0a\x01\x27\x00\x01\x0b\x00\x0a\x01\x27\x00\x01\x00\x00\x5a\x01\x01\x01"))
	f.Add([]byte("seed corpus: stores, removes and queries over a few prompts"))
	f.Fuzz(func(t *testing.T, data []byte) { flashtest.FuzzOpsWide(t, syncFactory, data) })
}

// FuzzFlashWider fuzzes the differential over sets of three words
// (flashtest.FuzzOpsWider): the decoded workers take slots 60–71, so
// entries move between the table's values and arena slots as workers past
// slot 62 join and leave them. Its second seed (FuzzFlashWide's) has
// twelve workers store one prompt and then queries it.
func FuzzFlashWider(f *testing.F) {
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d"))
	f.Add([]byte("\x00\x00\x0a\x01\x27\x00\x01\x01\x00\x0a\x01\x27\x00\x01\x02\x00\x0a\x01\x27\x00\x01\x03\x00\x0a\x01\x27\x00\x01\x04\x00\x0a\x01\x27\x00\x01\x05\x00\x0a\x01\x27\x00\x01\x06\x00\x0a\x01\x27\x00\x01\x07\x00\x0a\x01\x27\x00\x01\x08\x00\x0a\x01\x27\x00\x01\x09\x00\x0a\x01\x27\x00\x01\x0a\x00\x0a\x01\x27\x00\x01\x0b\x00\x0a\x01\x27\x00\x01\x00\x00\x5a\x01\x01\x01"))
	f.Add([]byte("seed corpus: stores, removes and queries over a few prompts"))
	f.Fuzz(func(t *testing.T, data []byte) { flashtest.FuzzOpsWider(t, syncFactory, data) })
}

// FuzzFlashHints is FuzzFlash with capacity hints that differ by worker:
// none, fewer blocks than the worker stores, and more (the id maps' floors
// and growth; made ahead, WithReservedCapacity, for inputs of odd length:
// the hinted nodes and the tables' reservations).
func FuzzFlashHints(f *testing.F) {
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d"))
	f.Add([]byte("seed corpus: stores, removes and queries over a few prompts"))
	hint := flash.WithWorkerCapacityOf(func(w flash.Worker) int { return []int{0, 3, 40, 5000}[w.ID%4] })
	f.Fuzz(func(t *testing.T, data []byte) {
		flashtest.FuzzOps(t, func(t testing.TB, cfg flash.Config) flash.Index {
			if len(data)%2 == 1 {
				return flash.New(flash.WithConfig(cfg), flash.WithWriters(0), hint, flash.WithReservedCapacity())
			}
			return flash.New(flash.WithConfig(cfg), flash.WithWriters(0), hint)
		}, data)
	})
}

func FuzzFlash(f *testing.F) {
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d"))
	f.Add([]byte("seed corpus: stores, removes and queries over a few prompts"))
	f.Fuzz(func(t *testing.T, data []byte) { flashtest.FuzzOps(t, syncFactory, data) })
}

// FuzzFlashTiers runs decoded operations over three tiers (FuzzOpsTiers).
func FuzzFlashTiers(f *testing.F) {
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d"))
	f.Add([]byte("tiers: offloads, evictions from the GPU, clears of one tier, queries"))
	f.Fuzz(func(t *testing.T, data []byte) { flashtest.FuzzOpsTiers(t, syncFactory, data) })
}

// A synchronous index with several lanes answers like the model (one caller).
func TestFlash_ConformanceSyncLanes(t *testing.T) {
	flashtest.Run(t, func(t testing.TB, cfg flash.Config) flash.Index {
		return flash.New(flash.WithConfig(cfg), flash.WithWriters(0), flash.WithSyncLanes(3))
	})
}

// With a table per lane, synchronous or with writer goroutines, every answer
// is the model's: a query joins the lanes' searches.
func TestFlash_ConformanceLaneTables(t *testing.T) {
	t.Run("sync-lanes=3", func(t *testing.T) {
		flashtest.Run(t, func(t testing.TB, cfg flash.Config) flash.Index {
			return flash.New(flash.WithConfig(cfg), flash.WithWriters(0), flash.WithSyncLanes(3), flash.WithLaneTables(true))
		})
	})
	t.Run("writers=2", func(t *testing.T) {
		flashtest.Run(t, func(t testing.TB, cfg flash.Config) flash.Index {
			return flash.New(flash.WithConfig(cfg), flash.WithWriters(2), flash.WithQueueSize(64), flash.WithLaneTables(true))
		})
	})
}

// With capacity hints every answer is the model's, whether they only steer
// the id maps' growth or make state ahead (WithReservedCapacity): then a
// hinted worker's state is made for its hint, and room in the shared
// tables is set aside for it when it takes its slot and given back when it
// leaves (tables carved from it and their replaced sizes reused under
// readers). The hints differ by worker: none, fewer blocks than the worker
// stores, and more.
func TestFlash_ConformanceCapacityHints(t *testing.T) {
	hint := flash.WithWorkerCapacityOf(func(w flash.Worker) int { return []int{0, 3, 40, 5000}[w.ID%4] })
	for _, mode := range []string{"hints", "reserved"} {
		opts := []flash.Option{hint}
		if mode == "reserved" {
			opts = append(opts, flash.WithReservedCapacity())
		}
		hinted := func(t testing.TB, cfg flash.Config) flash.Index {
			return flash.New(append([]flash.Option{flash.WithConfig(cfg), flash.WithWriters(0)}, opts...)...)
		}
		t.Run(mode+"/sync", func(t *testing.T) {
			flashtest.Run(t, hinted)
			seeds := uint64(3)
			if mode == "hints" && testing.Short() {
				seeds = 1 // a hint alone changes only the id maps' steps
			}
			for seed := uint64(1); seed <= seeds; seed++ {
				flashtest.RandomDifferentialBusy(t, hinted, seed, 3000)
			}
		})
		t.Run(mode+"/writers=2", func(t *testing.T) {
			flashtest.Run(t, func(t testing.TB, cfg flash.Config) flash.Index {
				return flash.New(append([]flash.Option{flash.WithConfig(cfg), flash.WithWriters(2), flash.WithQueueSize(64)}, opts...)...)
			})
		})
	}
	for seed := uint64(1); seed <= 3; seed++ {
		flashtest.RandomDifferentialBusy(t, syncFactory, seed, 3000)
	}
}
