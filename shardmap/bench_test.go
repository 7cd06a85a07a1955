package shardmap_test

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/flashindexer/flashindexer/shardmap"
)

var sizes = []int{1 << 10, 1 << 16, 1 << 20, 1 << 24}

func benchKeys(n int) []uint64 {
	r := rand.New(rand.NewPCG(uint64(n), 7))
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = r.Uint64() | 1
	}
	return keys
}

// lookupOrder is a random permutation of indexes, so lookups miss caches the
// way a router's queries do at large sizes.
func lookupOrder(n int) []uint32 {
	r := rand.New(rand.NewPCG(uint64(n), 8))
	order := make([]uint32, 1<<16)
	for i := range order {
		order[i] = uint32(r.IntN(n))
	}
	return order
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprint(n)
}

func skipLarge(b *testing.B, n int) {
	if testing.Short() && n > 1<<20 {
		b.Skip("large size in short mode")
	}
}

func BenchmarkLookup(b *testing.B) {
	for _, n := range sizes {
		keys, order := benchKeys(n), lookupOrder(n)
		b.Run("impl=shardmap/keys="+sizeName(n), func(b *testing.B) {
			skipLarge(b, n)
			m := shardmap.New()
			for i, k := range keys {
				put(m, 0, k, uint64(i+1))
			}
			b.ReportAllocs()
			b.ResetTimer()
			var sink uint64
			i := 0
			for b.Loop() {
				sink += m.Get(0, keys[order[i&0xFFFF]])
				i++
			}
			if sink == 0 {
				b.Fatal("no hits")
			}
		})
		b.Run("impl=gomap/keys="+sizeName(n), func(b *testing.B) {
			skipLarge(b, n)
			m := make(map[uint64]uint32)
			for i, k := range keys {
				m[k] = uint32(i + 1)
			}
			b.ReportAllocs()
			b.ResetTimer()
			var sink uint32
			i := 0
			for b.Loop() {
				sink += m[keys[order[i&0xFFFF]]]
				i++
			}
			if sink == 0 {
				b.Fatal("no hits")
			}
		})
	}
}

// BenchmarkInsert fills one position from empty: with a shard's lock per
// insert (shardmap), as one writer does (a sole writer's Or, one
// shard), and so into tables made for every key (presized), against the
// built-in map (gomap). The difference between exclusive and presized is
// what growing the table costs a key.
func BenchmarkInsert(b *testing.B) {
	for _, n := range sizes[:3] {
		keys := benchKeys(n)
		b.Run("impl=shardmap/keys="+sizeName(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m := shardmap.New()
				for i, k := range keys {
					put(m, 0, k, uint64(i+1))
				}
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "inserts/s")
		})
		for _, presized := range []bool{false, true} {
			name := "exclusive"
			opts := []shardmap.Option{shardmap.WithShardBits(0)}
			if presized {
				name, opts = "presized", append(opts, shardmap.WithCapacity(n))
			}
			b.Run("impl="+name+"/keys="+sizeName(n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					m := shardmap.New(opts...)
					for i, k := range keys {
						shardmap.SoleOr(m, 0, k, uint64(i+1))
					}
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "inserts/s")
			})
		}
		b.Run("impl=gomap/keys="+sizeName(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m := make(map[uint64]uint32)
				for i, k := range keys {
					m[k] = uint32(i + 1)
				}
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "inserts/s")
		})
	}
}

// Parallel lock-free reads while one writer keeps inserting and deleting.
func BenchmarkLookupParallelWithWriter(b *testing.B) {
	for _, n := range sizes[:3] {
		keys, order := benchKeys(n), lookupOrder(n)
		b.Run("impl=shardmap/keys="+sizeName(n), func(b *testing.B) {
			m := shardmap.New()
			for i, k := range keys {
				put(m, 0, k, uint64(i+1))
			}
			var stop atomic.Bool
			done := make(chan struct{})
			go func() {
				defer close(done)
				r := rand.New(rand.NewPCG(1, 1))
				for !stop.Load() {
					k := r.Uint64() | 1
					put(m, 0, k, 1)
					put(m, 0, k, 0)
				}
			}()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := rand.IntN(1 << 16)
				var sink uint64
				for pb.Next() {
					sink += m.Get(0, keys[order[i&0xFFFF]])
					i++
				}
				_ = sink
			})
			b.StopTimer()
			stop.Store(true)
			<-done
		})
	}
}
