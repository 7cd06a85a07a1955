package shardmap_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/flashindexer/flashindexer/internal/allocs"
	"github.com/flashindexer/flashindexer/internal/keyhash"
	"github.com/flashindexer/flashindexer/shardmap"
)

type pk struct {
	pos int
	key uint64
}

func put(m *shardmap.Map, pos int, key, val uint64) {
	m.Put(pos, key, val)
}

// runModel applies next-driven ops to a map and to a plain Go map and
// compares after every op.
func runModel(t testing.TB, m *shardmap.Map, next func(int) int, steps int) {
	ref := map[pk]uint64{}
	keys := []uint64{0, 1, 2, 3, 1 << 40, 1<<40 | 1, ^uint64(0)}
	for step := 0; step < steps; step++ {
		pos := next(5)
		var key uint64
		if next(2) == 0 {
			key = keys[next(len(keys))]
		} else {
			key = uint64(next(200)) * 0x1000
		}
		val := uint64(0)
		if next(3) != 0 {
			val = uint64(next(1000) + 1)
		}
		w := m.Writer()
		got := w.Update(pos, w.Key(key), func(uint64) uint64 { return val })
		if want := ref[pk{pos, key}]; got != want {
			t.Fatalf("step %d: Update(%d,%x) found %d, want %d", step, pos, key, got, want)
		}
		if val == 0 {
			delete(ref, pk{pos, key})
		} else {
			ref[pk{pos, key}] = val
		}
		if step%16 == 0 || steps < 300 {
			for k, v := range ref {
				if got := m.Get(k.pos, k.key); got != v {
					t.Fatalf("step %d: Get(%d,%x) = %d, want %d", step, k.pos, k.key, got, v)
				}
			}
			if got := m.Get(pos, key); got != val {
				t.Fatalf("step %d: Get after Put = %d, want %d", step, got, val)
			}
			if s := m.Stats(); s.Keys != len(ref) {
				t.Fatalf("step %d: Stats.Keys = %d, want %d", step, s.Keys, len(ref))
			}
			if err := shardmap.CheckBuckets(m); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
	}
	if m.Get(1000, 5) != 0 {
		t.Fatal("Get past the last position")
	}
}

func TestMap_RandomOps(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		r := rand.New(rand.NewPCG(seed, 11))
		runModel(t, shardmap.New(), r.IntN, 20000)
	}
}

func TestMap_RandomOpsDegenerateHash(t *testing.T) {
	for _, bits := range []uint{0, 3} {
		r := rand.New(rand.NewPCG(uint64(bits), 12))
		m := shardmap.New(shardmap.WithShardBits(bits))
		shardmap.Degenerate(m)
		runModel(t, m, r.IntN, 20000)
	}
}

func FuzzMap(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, false)
	f.Add([]byte{1, 1, 1, 0, 0, 0, 2, 2, 2, 1, 0}, true)
	f.Fuzz(func(t *testing.T, data []byte, degenerate bool) {
		m := shardmap.New()
		if degenerate {
			shardmap.Degenerate(m)
		}
		next := func(n int) int {
			if len(data) == 0 {
				return 0
			}
			v := int(data[0])
			data = data[1:]
			return v % n
		}
		runModel(t, m, next, len(data)/4)
	})
}

// Deleted keys are compacted away: churn does not grow the tables.
func TestMap_ChurnBounded(t *testing.T) {
	m := shardmap.New()
	r := rand.New(rand.NewPCG(3, 3))
	live := map[uint64]bool{}
	var peak int
	for round := 0; round < 200; round++ {
		for i := 0; i < 1000; i++ {
			k := r.Uint64()
			put(m, 0, k, 1)
			live[k] = true
		}
		for k := range live {
			put(m, 0, k, 0)
			delete(live, k)
			if len(live) <= 500 {
				break
			}
		}
		s := m.Stats()
		if round == 10 {
			peak = s.Slots
		}
		if round > 10 && s.Slots > 2*peak {
			t.Fatalf("round %d: %d slots for %d keys (peak %d)", round, s.Slots, s.Keys, peak)
		}
	}
}

// A full table grows 4× while it is small and 2× from 256 slots; a table
// never holds more than 3/4 of its slots.
func TestMap_GrowthGenerations(t *testing.T) {
	m := shardmap.New(shardmap.WithShardBits(0))
	var caps []int
	for k := uint64(1); k <= 3000; k++ {
		put(m, 0, k, k)
		if s := m.Stats(); len(caps) == 0 || s.Slots != caps[len(caps)-1] {
			if s.Keys*4 > s.Slots*3 {
				t.Fatalf("%d keys in %d slots", s.Keys, s.Slots)
			}
			caps = append(caps, s.Slots)
		}
	}
	want := []int{8, 32, 128, 512, 1024, 2048, 4096}
	if fmt.Sprint(caps) != fmt.Sprint(want) {
		t.Fatalf("table sizes %v, want %v", caps, want)
	}
}

// Keys crafted to collide in the low bits of an unkeyed table keep probe
// lengths like random keys.
func TestMap_HashFloodingBounded(t *testing.T) {
	const n = 20_000
	// The average and the 99th percentile of the probe lengths: the maximum
	// of 20,000 draws swings too much between secrets to compare.
	avgProbes := func(k0, k1 uint64, keys []uint64) (float64, int) {
		m := shardmap.WithSecret(shardmap.New(), k0, k1)
		for _, k := range keys {
			put(m, 0, k, 1)
		}
		sum := 0
		probes := make([]int, len(keys))
		for i, k := range keys {
			probes[i] = shardmap.Probes(m, 0, k)
			sum += probes[i]
		}
		slices.Sort(probes)
		return float64(sum) / float64(len(keys)), probes[len(probes)*99/100]
	}
	r := rand.New(rand.NewPCG(1, 1))
	random := make([]uint64, n)
	for i := range random {
		random[i] = r.Uint64()
	}
	families := map[uint][]uint64{}
	// Families equal in all bits below the shift; shift 0: equal high bits.
	for _, shift := range []uint{16, 32, 44, 48, 0} {
		crafted := make([]uint64, n)
		for i := range crafted {
			crafted[i] = uint64(i+1) << shift
			if shift == 0 {
				crafted[i] |= 0xABCD << 48
			}
		}
		families[shift] = crafted
	}
	// Many secrets, drawn from a fixed seed: a weakness that shows under a
	// few secrets in a hundred fails here every time, not in one CI run of
	// twenty.
	for s := 0; s < 40; s++ {
		k0, k1 := r.Uint64(), r.Uint64()
		ra, rw := avgProbes(k0, k1, random)
		for shift, crafted := range families {
			ca, cw := avgProbes(k0, k1, crafted)
			if ca > 1.5*ra+0.1 || cw > 2*rw+2 {
				t.Fatalf("secret %d: keys differing above bit %d probe %.2f avg / %d at p99 vs random %.2f / %d", s, shift, ca, cw, ra, rw)
			}
		}
	}
}

// Writers and readers at once: a reader sees, for each key, 0 or a value a
// writer put there; at the end the state is exact.
func TestMap_ConcurrentReadersWriters(t *testing.T) {
	m := shardmap.New(shardmap.WithShardBits(1))
	const writers, keysPer, rounds = 2, 300, 30
	var done atomic.Bool
	var wg, rg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 1; r <= rounds; r++ {
				for k := 0; k < keysPer; k++ {
					key := uint64(w*keysPer + k)
					pos := k % 7
					if (k+r)%3 == 0 {
						put(m, pos, key, 0)
					} else {
						put(m, pos, key, key<<20|uint64(r))
					}
				}
				runtime.Gosched()
			}
		}()
	}
	for r := 0; r < 2; r++ {
		rg.Add(1)
		go func() {
			defer rg.Done()
			for !done.Load() {
				for key := uint64(0); key < writers*keysPer; key++ {
					v := m.Get(int(key%keysPer)%7, key)
					if v != 0 && (v>>20 != key || v&0xFFFFF == 0 || v&0xFFFFF > rounds) {
						panic(fmt.Sprintf("key %d: value %x was never put", key, v))
					}
				}
			}
		}()
	}
	wg.Wait()
	done.Store(true)
	rg.Wait()
	for w := 0; w < writers; w++ {
		for k := 0; k < keysPer; k++ {
			key := uint64(w*keysPer + k)
			want := key<<20 | rounds
			if (k+rounds)%3 == 0 {
				want = 0
			}
			if got := m.Get(k%7, key); got != want {
				t.Fatalf("key %d: %x, want %x", key, got, want)
			}
		}
	}
}

func TestMap_ZeroAllocs(t *testing.T) {
	m := shardmap.New(shardmap.WithCapacity(1024))
	put(m, 3, 1, 1) // creates the level and the table
	keys := make([]uint64, 500)
	for i := range keys {
		keys[i] = uint64(i+1) * 0x9E3779B97F4A7C15
	}
	i := 0
	if n := testing.AllocsPerRun(400, func() {
		put(m, 3, keys[i%len(keys)], 7)
		_ = m.Get(3, keys[i%len(keys)])
		i++
	}); n != 0 {
		t.Fatalf("%v allocations per insert into a presized table + lookup", n)
	}
}

// A map whose keys churn at a steady count rebuilds its tables at the size
// they have (tombstones fill them): each rebuild takes the table the last
// one replaced, and nothing is allocated. Every key reads back its value.
func TestMap_SteadyChurnReusesTables(t *testing.T) {
	const positions, live = 4, 600
	m := shardmap.New(shardmap.WithShardBits(0))
	next := uint64(1)
	fresh := func() uint64 { next++; return next * 0x9E3779B97F4A7C15 }
	held := make([][]uint64, positions)
	for pos := range held {
		for range live {
			k := fresh()
			held[pos] = append(held[pos], k)
			put(m, pos, k, k^uint64(pos))
		}
	}
	i := 0
	churn := func() { // one position: a key out, a new one in
		pos := i % positions
		i++
		put(m, pos, held[pos][0], 0)
		k := fresh()
		held[pos] = append(held[pos][1:], k)
		put(m, pos, k, k^uint64(pos))
	}
	for range 20 * live {
		churn()
	}
	e := m.Epoch()
	if n := testing.AllocsPerRun(10*live, churn); n != 0 {
		t.Fatalf("%v allocations per churned key", n)
	}
	if m.Epoch() == e {
		t.Fatal("no table was reused: the test measures nothing")
	}
	for pos, keys := range held {
		for _, k := range keys {
			if got := m.Get(pos, k); got != k^uint64(pos) {
				t.Fatalf("Get(%d, %x) = %x, want %x", pos, k, got, k^uint64(pos))
			}
		}
	}
	if s := m.Stats(); s.Keys != positions*live || s.Spares > 1 {
		t.Fatalf("stats %+v", s)
	}
}

// Tables whose live keys hover about half their size while they churn are
// rebuilt at their size as tombstones fill them. Growing whenever a rebuild
// found a key past half would double a table and halve it again as the
// count moved across: a table allocated each time, and twice the memory
// every other time (a fleet's prompts span many positions alike, so their
// tables flip together: the soak test's heap rose 9.5% that way).
func TestMap_ChurnAtHalfKeepsItsSize(t *testing.T) {
	const positions = 4 // spares stay within a quarter of the live bytes
	m := shardmap.New(shardmap.WithShardBits(0))
	key := func(pos, i int) uint64 { return (uint64(pos+1)<<40 | uint64(i+1)) * 0x9E3779B97F4A7C15 }
	var lo, hi [positions]int // each position holds keys [lo, hi)
	add := func(pos, n int) {
		for ; n > 0; n-- {
			put(m, pos, key(pos, hi[pos]), uint64(hi[pos]+1))
			hi[pos]++
		}
	}
	drop := func(pos, n int) {
		for ; n > 0; n-- {
			put(m, pos, key(pos, lo[pos]), 0)
			lo[pos]++
		}
	}
	for pos := range positions {
		add(pos, 700) // 1,024 slots as they grow
		drop(pos, 220)
	}
	churn := func() { // live keys 480 → 560 → 480 at each position
		for pos := range positions {
			add(pos, 80)
			drop(pos, 80)
		}
	}
	for range 100 {
		churn()
	}
	slots := m.Stats().Slots
	e := m.Epoch()
	if n := allocs.Of(func() {
		for range 100 {
			churn()
		}
	}); n != 0 {
		t.Fatalf("%v allocations in 100 rounds", n)
	}
	for range 100 {
		churn()
		if s := m.Stats().Slots; s != slots {
			t.Fatalf("tables of %d slots became %d", slots, s)
		}
	}
	if m.Epoch() == e {
		t.Fatal("no table was rebuilt: the test measures nothing")
	}
	for pos := range positions {
		for i := lo[pos]; i < hi[pos]; i++ {
			if m.Get(pos, key(pos, i)) != uint64(i+1) {
				t.Fatalf("key %d at %d lost", i, pos)
			}
		}
	}
}

// Content that moves between positions, as a full cache's does: a set of
// keys leaves one deep position (its table goes with its last key) and
// arrives at another (whose table grows from the smallest size through
// every size to the set's). Once the sizes' spares are in place, a move
// allocates nothing, small tables included, while the rest of the map
// holds enough keys for the spares' share.
func TestMap_MovingContentReusesTables(t *testing.T) {
	const base, moving, from = 3000, 300, 1500 // 4,096 slots at 0; 512 moving
	m := shardmap.New(shardmap.WithShardBits(0))
	key := func(i int) uint64 { return uint64(i+2) * 0x9E3779B97F4A7C15 }
	for i := range base {
		put(m, 0, key(i), 1)
	}
	put(m, from+2, key(-1), 1) // the deep levels stay
	at := from
	move := func() {
		to := 2*from + 1 - at
		for i := range moving {
			put(m, to, key(base+i), uint64(to))
		}
		for i := range moving {
			put(m, at, key(base+i), 0)
		}
		at = to
	}
	for range 8 {
		move()
	}
	e := m.Epoch()
	// One run of 64 moves: AllocsPerRun rounds an average down.
	if n := allocs.Of(func() {
		for range 64 {
			move()
		}
	}); n != 0 {
		t.Fatalf("%v allocations in 64 moves of %d keys", n, moving)
	}
	if m.Epoch() == e {
		t.Fatal("no table was reused: the test measures nothing")
	}
	for i := range moving {
		if got, other := m.Get(at, key(base+i)), m.Get(2*from+1-at, key(base+i)); got != uint64(at) || other != 0 {
			t.Fatalf("key %d: %d at %d, %d at the other position", i, got, at, other)
		}
	}
	if s := m.Stats(); s.Keys != base+moving+1 {
		t.Fatalf("stats %+v", s)
	}
}

// Spares follow the live tables: while content churns they stay within a
// quarter of the live tables' bytes, and when it leaves (the deep tables go
// with their last keys) they go too.
func TestMap_SparesFollowContent(t *testing.T) {
	const from, positions, keys = 2000, 16, 300 // 512-slot tables, dropped when empty
	m := shardmap.New(shardmap.WithShardBits(0))
	key := func(pos, i int) uint64 { return (uint64(pos)<<32 | uint64(i+1)) * 0x9E3779B97F4A7C15 }
	fill := func(pos int, val uint64) {
		for i := range keys {
			put(m, pos, key(pos, i), val)
		}
	}
	for round := range 4 {
		for pos := from; pos < from+positions; pos++ {
			fill(pos, 1)
		}
		s := m.Stats()
		if s.Keys != positions*keys || s.Spares == 0 || 4*s.SpareBytes > 16*s.Slots {
			t.Fatalf("round %d, full: %+v", round, s)
		}
		for pos := from; pos < from+positions; pos++ {
			fill(pos, 0)
		}
		if s := m.Stats(); s.Keys != 0 || s.Tables != 0 || s.Spares != 0 {
			t.Fatalf("round %d, emptied: %+v", round, s)
		}
	}
}

// A reader that loaded a table and stalled while the table was replaced
// and reused for another position reads that position's keys there: the
// table position 0 had becomes position 1's. The map's Epoch has moved by
// then, which is how Get, and the callers of Peek, know to look again.
func TestMap_ReusedTableMovesEpoch(t *testing.T) {
	const live = 400 // 1,024 slots, rebuilt at that size as keys churn
	m := shardmap.New(shardmap.WithShardBits(0))
	next := uint64(1)
	fresh := func() uint64 { next++; return next * 0x9E3779B97F4A7C15 }
	held := make([][]uint64, 4)
	for pos := range held {
		for range live {
			k := fresh()
			held[pos] = append(held[pos], k)
			put(m, pos, k, k^uint64(pos))
		}
	}
	// One key at positions 0 and 1, with values naming the position.
	shared := fresh()
	put(m, 0, shared, 100)
	put(m, 1, shared, 101)
	churn := func(pos int) {
		put(m, pos, held[pos][0], 0)
		k := fresh()
		held[pos] = append(held[pos][1:], k)
		put(m, pos, k, k^uint64(pos))
	}
	// Position 0's table is replaced, then position 1's: the second
	// rebuild takes the first one's table.
	t0 := shardmap.TableOf(m, 0, shared)
	for i := 0; shardmap.TableOf(m, 0, shared) == t0; i++ {
		if i > 100*live {
			t.Fatal("position 0's table is never replaced")
		}
		churn(0)
	}
	e := m.Epoch()
	for i := 0; m.Epoch() == e; i++ {
		if i > 100*live {
			t.Fatal("no table is reused")
		}
		churn(1)
	}
	if shardmap.TableOf(m, 1, shared) != t0 {
		t.Fatal("position 1's table is not the one position 0 had")
	}
	if m.Get(0, shared) != 100 || m.Get(1, shared) != 101 {
		t.Fatalf("Get: %d, %d", m.Get(0, shared), m.Get(1, shared))
	}
}

// Readers look keys up while a writer churns every position's keys (each
// round's keys new, the keys of two rounds before deleted), so that tables
// fill with tombstones, are rebuilt at their size and reused for other
// positions under the readers. A key is at two positions, with a value
// naming the position and the key: a lookup that returned what a reused
// table held for another position would show it.
func TestMap_ReadersWhileTablesAreReused(t *testing.T) {
	for _, reserve := range []int{0, 2000} {
		t.Run(fmt.Sprintf("reserve=%d", reserve), func(t *testing.T) { readersWhileTablesAreReused(t, reserve) })
	}
}

// readersWhileTablesAreReused is the test in a map reserved for that many
// keys (Reserve), whose tables and their replaced sizes are the
// reservation's.
func readersWhileTablesAreReused(t *testing.T, reserve int) {
	const positions, perRound, rounds = 6, 400, 80
	m := shardmap.New(shardmap.WithShardBits(0))
	m.Reserve(reserve, positions)
	key := func(id int) uint64 { return uint64(id+1) * 0x9E3779B97F4A7C15 }
	val := func(pos, id int) uint64 { return uint64(pos)<<56 | uint64(id)<<8 | 1 }
	at := func(id int) [2]int { return [2]int{id % positions, (id + 1) % positions} }
	var done atomic.Bool
	var rg sync.WaitGroup
	var seen atomic.Int64
	for r := range 2 {
		rg.Add(1)
		go func() {
			defer rg.Done()
			for i := r; !done.Load(); i++ {
				id := i * 7919 % (perRound * rounds)
				for _, pos := range at(id) {
					v := m.Get(pos, key(id))
					if v != 0 && v != val(pos, id) {
						panic(fmt.Sprintf("Get(%d, key %d) = %x, want 0 or %x", pos, id, v, val(pos, id)))
					}
					if v != 0 {
						seen.Add(1)
					}
				}
			}
		}()
	}
	e := m.Epoch()
	for round := range rounds {
		for i := range perRound {
			id := round*perRound + i
			for _, pos := range at(id) {
				put(m, pos, key(id), val(pos, id))
			}
			if round >= 2 {
				old := id - 2*perRound
				for _, pos := range at(old) {
					put(m, pos, key(old), 0)
				}
			}
		}
		runtime.Gosched()
	}
	done.Store(true)
	rg.Wait()
	if m.Epoch() == e || seen.Load() == 0 {
		t.Fatalf("epoch %d → %d, %d values seen: the test exercised nothing", e, m.Epoch(), seen.Load())
	}
	if s := m.Stats(); reserve > 0 && s.Reserved == 8*shardmap.ReserveWords*reserve {
		t.Fatalf("no table carved from the reservation: %+v", s)
	}
	t.Logf("%d tables reused, %d values read", m.Epoch()-e, seen.Load())
}

// Small tables share their allocations: a map of 512 positions, each grown
// from 8 to 32 slots, allocates table headers and small tables' slots in
// batches (about 2,000 allocations one by one), and its tables stay apart:
// every key reads back its own value.
func TestMap_SmallTablesShareAllocations(t *testing.T) {
	const positions, keys = 512, 20
	var m *shardmap.Map
	n := testing.AllocsPerRun(1, func() {
		m = shardmap.New(shardmap.WithShardBits(0))
		for pos := range positions {
			for k := uint64(1); k <= keys; k++ {
				put(m, pos, k*0x9E3779B97F4A7C15, uint64(pos)<<8|k)
			}
		}
	})
	if n > 80 {
		t.Fatalf("%v allocations for %d positions of %d keys", n, positions, keys)
	}
	for pos := range positions {
		for k := uint64(1); k <= keys; k++ {
			if got, want := m.Get(pos, k*0x9E3779B97F4A7C15), uint64(pos)<<8|k; got != want {
				t.Fatalf("Get(%d, key %d) = %x, want %x", pos, k, got, want)
			}
		}
	}
	if s := m.Stats(); s.Tables != positions || s.Slots != positions*32 || s.Keys != positions*keys {
		t.Fatalf("stats %+v", s)
	}
}

// A table that grows large while small tables are made beside it leaves
// nothing of its replaced generations reachable: the map's heap is its
// tables' and levels' memory, not twice the large table's.
func TestMap_ReplacedTablesFreed(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := shardmap.New(shardmap.WithShardBits(0))
	for k := uint64(1); k <= 50000; k++ {
		put(m, 0, k, k)
		if k%200 == 0 { // a small table beside each step of the large one
			put(m, int(k/200), k, k)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	s := m.Stats()
	heap := int(after.HeapAlloc) - int(before.HeapAlloc)
	if heap > s.Bytes+s.Bytes/4+128<<10 {
		t.Fatalf("heap grew %d bytes for tables and levels of %d", heap, s.Bytes)
	}
	runtime.KeepAlive(m)
}

// The prefetch hints read no table memory themselves and change nothing:
// on an empty map, past the inline positions, for key 0, in runs that
// cross the last inline position or reach positions with no table, and
// before and after a rebuild, lookups answer as before.
func TestPrefetch_ChangesNothing(t *testing.T) {
	m := shardmap.New()
	run := make([]keyhash.Key, 40)
	for i := range run {
		run[i] = m.SoleWriter().Key(uint64(i % 7))
	}
	runs := func() {
		for _, pos := range []int{0, 1, 990, 1000, 1023, 1024, 1031} {
			m.SoleWriter().PrefetchBuckets(pos, run)
			m.SoleWriter().PrefetchBuckets(pos, run[:1])
			m.SoleWriter().PrefetchBuckets(pos, nil)
		}
	}
	for _, pos := range []int{0, 1, 1023, 1024, 1031} { // either side of the inline positions
		m.SoleWriter().PrefetchTable(pos, m.SoleWriter().Key(0))
		m.SoleWriter().PrefetchBuckets(pos, []keyhash.Key{m.SoleWriter().Key(0)})
		m.SoleWriter().PrefetchTable(pos, m.SoleWriter().Key(42))
		m.SoleWriter().PrefetchBuckets(pos, []keyhash.Key{m.SoleWriter().Key(42)})
	}
	runs()
	for k := uint64(1); k <= 100; k++ {
		m.SoleWriter().PrefetchTable(int(k%3), m.SoleWriter().Key(k))
		m.SoleWriter().PrefetchBuckets(int(k%3), []keyhash.Key{m.SoleWriter().Key(k)})
		put(m, int(k%3), k, k*7)
		if k%10 != 3 { // tables at 1000 to 1029 but 1003, 1013 and 1023
			put(m, 1000+int(k%30), k, k*7)
		}
	}
	runs()
	for k := uint64(1); k <= 100; k++ {
		m.SoleWriter().PrefetchTable(int(k%3), m.SoleWriter().Key(k))
		m.SoleWriter().PrefetchBuckets(int(k%3), []keyhash.Key{m.SoleWriter().Key(k)})
		if got := m.Get(1000+int(k%30), k); got != k*7 && k%10 != 3 {
			t.Fatalf("Get(%d, %d) = %d, want %d", 1000+k%30, k, got, k*7)
		}
		if got := m.Get(int(k%3), k); got != k*7 {
			t.Fatalf("Get(%d, %d) = %d, want %d", k%3, k, got, k*7)
		}
	}
}

// The prefetches ask for the right lines: the header of the key's table, and
// the bucket its lookup reads first (for a key in that bucket, the line of
// its slot); none past the inline positions, where finding the table costs
// the directory's loads.
func TestPrefetch_Addresses(t *testing.T) {
	m := shardmap.New()
	for k := uint64(1); k <= 3000; k++ {
		put(m, int(k%3), k, k)
		put(m, 1024+int(k%2), k, k)
	}
	home := 0
	for k := uint64(1); k <= 3000; k++ {
		tab, bucket, wantTab, wantBucket := shardmap.PrefetchAddrs(m, int(k%3), k)
		if tab != wantTab || tab == 0 {
			t.Fatalf("key %d: table prefetch at %#x, the table is at %#x", k, tab, wantTab)
		}
		if wantBucket != 0 {
			home++
			if bucket != wantBucket {
				t.Fatalf("key %d: bucket prefetch at %#x, its slot's line is %#x", k, bucket, wantBucket)
			}
		}
		if tab, bucket, _, _ := shardmap.PrefetchAddrs(m, 1024+int(k%2), k); tab != 0 || bucket != 0 {
			t.Fatalf("key %d past the inline positions: prefetches at %#x, %#x", k, tab, bucket)
		}
	}
	if home < 1500 {
		t.Fatalf("only %d of 3000 keys in their first bucket", home)
	}
}

// Past the inline positions memory follows the keys: emptied tables are
// dropped and trailing empty levels released, and the map works as before
// at every position it released, with a shared writer and a sole one.
func TestMap_DeepLevelsReleased(t *testing.T) {
	for _, excl := range []bool{false, true} {
		m := shardmap.New()
		set := func(pos int, key, val uint64) {
			w := m.Writer()
			if excl {
				w = m.SoleWriter()
			}
			w.Update(pos, w.Key(key), func(uint64) uint64 { return val })
		}
		deep := 20000
		if testing.Short() {
			deep = 5000
		}
		for round := 0; round < 3; round++ {
			for pos := 0; pos < deep; pos++ {
				set(pos, uint64(pos)*7+1, uint64(pos)+1)
			}
			if s := m.Stats(); s.Positions < deep || s.Keys != deep {
				t.Fatalf("round %d: full: %+v", round, s)
			}
			for pos := 0; pos < deep; pos++ {
				if got := m.Get(pos, uint64(pos)*7+1); got != uint64(pos)+1 {
					t.Fatalf("round %d: Get(%d) = %d", round, pos, got)
				}
			}
			// Deepest first, then from the top: both orders release.
			for i := 0; i < deep; i++ {
				pos := deep - 1 - i
				if round == 1 {
					pos = i
				}
				set(pos, uint64(pos)*7+1, 0)
			}
			s := m.Stats()
			if s.Keys != 0 || s.Positions > 1024 || s.Tables > 1024*8 {
				t.Fatalf("round %d (exclusive %v): emptied: %+v", round, excl, s)
			}
			if got := m.Get(deep-1, uint64(deep-1)*7+1); got != 0 {
				t.Fatalf("round %d: a released position answers %d", round, got)
			}
		}
	}
}

// Writers filling and emptying deep positions concurrently lose nothing to
// a level released under them: a writer that finds its level released
// looks it up again.
func TestMap_ConcurrentDeepRelease(t *testing.T) {
	m := shardmap.New(shardmap.WithShardBits(2))
	const writers, keysPer, base = 3, 2000, 1024
	rounds := uint64(20)
	if testing.Short() {
		rounds = 6
	}
	var done atomic.Bool
	var wg, rg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := uint64(1); r <= rounds; r++ {
				for k := 0; k < keysPer; k++ {
					key := uint64(w*keysPer + k + 1)
					put(m, base+k*(w+1), key, key<<20|r)
				}
				if r < rounds {
					for k := keysPer - 1; k >= 0; k-- {
						put(m, base+k*(w+1), uint64(w*keysPer+k+1), 0)
					}
				}
			}
		}()
	}
	rg.Add(1)
	go func() {
		defer rg.Done()
		for !done.Load() {
			for w := 0; w < writers; w++ {
				for k := 0; k < keysPer; k += 7 {
					key := uint64(w*keysPer + k + 1)
					if v := m.Get(base+k*(w+1), key); v != 0 && v>>20 != key {
						panic(fmt.Sprintf("key %d: value %x was never put", key, v))
					}
				}
			}
		}
	}()
	wg.Wait()
	done.Store(true)
	rg.Wait()
	for w := 0; w < writers; w++ {
		for k := 0; k < keysPer; k++ {
			key := uint64(w*keysPer + k + 1)
			if got, want := m.Get(base+k*(w+1), key), key<<20|rounds; got != want {
				t.Fatalf("writer %d key %d: %x, want %x", w, key, got, want)
			}
		}
	}
	if s := m.Stats(); s.Keys != writers*keysPer {
		t.Fatalf("%+v", s)
	}
}

// writers are a map's two kinds of writer, for tests that run each.
func writers(m *shardmap.Map) map[string]shardmap.Writer {
	return map[string]shardmap.Writer{"sole": m.SoleWriter(), "shared": m.Writer()}
}

// Writer.Or against a Go map: ORs into present, absent, deleted and zero
// keys, at hot and deep positions, mixed with deletes and growth, some
// unless a bit is held; it returns the value before and leaves the value
// ORed (or as it was, when it held a bit of unless). Map.Or is a shared
// writer's Or.
func TestWriter_Or(t *testing.T) {
	for _, kind := range []string{"sole", "shared", "map"} {
		r := rand.New(rand.NewPCG(31, 32))
		m := shardmap.New(shardmap.WithShardBits(0))
		w := writers(m)[kind]
		ref := map[pk]uint64{}
		positions := []int{0, 1, 1023, 1024, 1500}
		for step := 0; step < 60000; step++ {
			k := pk{positions[r.IntN(len(positions))], uint64(r.IntN(3000))}
			if r.IntN(5) == 0 {
				m.Delete(k.pos, k.key)
				delete(ref, k)
				continue
			}
			mask, unless := uint64(1)<<r.IntN(64), uint64(0)
			if kind != "map" && r.IntN(3) == 0 {
				unless = uint64(1) << r.IntN(64)
			}
			var got uint64
			if kind == "map" {
				got = m.Or(k.pos, k.key, mask)
			} else {
				got = w.Or(k.pos, w.Key(k.key), mask, unless)
			}
			if want := ref[k]; got != want {
				t.Fatalf("%s: step %d: Or(%d, %d, %x, %x) = %x, want %x", kind, step, k.pos, k.key, mask, unless, got, want)
			}
			if ref[k]&unless == 0 {
				ref[k] |= mask
			}
			if step%1000 == 0 {
				checkRef(t, m, ref, step)
			}
		}
	}
}

// checkRef checks that m holds the values of ref, and only its keys, and
// that its buckets fill their slots from the first.
func checkRef(t *testing.T, m *shardmap.Map, ref map[pk]uint64, step int) {
	t.Helper()
	for k, v := range ref {
		if got := m.Get(k.pos, k.key); got != v {
			t.Fatalf("step %d: Get(%d, %d) = %x, want %x", step, k.pos, k.key, got, v)
		}
	}
	if st := m.Stats(); st.Keys != len(ref) {
		t.Fatalf("step %d: %d live keys, want %d", step, st.Keys, len(ref))
	}
	if err := shardmap.CheckBuckets(m); err != nil {
		t.Fatalf("step %d: %v", step, err)
	}
}

// Writer.OrRun sets a mask in each key of a run, at consecutive
// positions, up to the first key that has a bit of unless (the mask, the
// mask and one more bit, or any value), as Or one key at a time would, for a sole writer and a shared one: runs that cross the inline positions, that fill
// tables (which grow) or reach positions with no table yet (each taken
// the general way, then the run resumes), that hold the key 0, and keys
// deleted between runs.
func TestWriter_OrRun(t *testing.T) {
	for _, c := range []struct {
		bits uint
		kind string
	}{{0, "sole"}, {3, "sole"}, {3, "shared"}} {
		bits := c.bits
		r := rand.New(rand.NewPCG(33, uint64(bits)))
		m := shardmap.New(shardmap.WithShardBits(bits))
		w := writers(m)[c.kind]
		ref := map[pk]uint64{}
		var keys []keyhash.Key
		for step := 0; step < 6000; step++ {
			pos := []int{0, 1, 5, 1000, 1020, 1500}[r.IntN(6)]
			n := r.IntN(80)
			mask := uint64(1) << r.IntN(3)
			unless := []uint64{mask, ^uint64(0), mask | 1<<r.IntN(3)}[r.IntN(3)]
			keys = keys[:0]
			for i := range n {
				key := uint64(r.IntN(400))
				if r.IntN(50) == 0 {
					key = 0
				}
				if r.IntN(3) == 0 && i > 0 {
					key = keys[i-1].K // often the same sequence hash again
				}
				keys = append(keys, m.SoleWriter().Key(key))
			}
			want := n
			for i, k := range keys {
				if ref[pk{pos + i, k.K}]&unless != 0 {
					want = i
					break
				}
			}
			if got := w.OrRun(pos, keys, mask, unless); got != want {
				t.Fatalf("%s: step %d: OrRun at %d of %d keys = %d, want %d", c.kind, step, pos, n, got, want)
			}
			for i := range want {
				ref[pk{pos + i, keys[i].K}] |= mask
			}
			for range r.IntN(20) {
				k := pk{pos + r.IntN(max(n, 1)), uint64(r.IntN(400))}
				m.Delete(k.pos, k.key)
				delete(ref, k)
			}
			if step%200 == 0 {
				checkRef(t, m, ref, step)
			}
		}
	}
}

// bucketAddrs gives each key of
// a run what BucketAddr gives it alone, in runs that start at and cross
// the last inline position, reach positions with no table, or start past
// the inline ones; and a Keyer's Key is the map's.
func TestMap_BucketAddrs(t *testing.T) {
	for _, bits := range []uint{0, 3} {
		r := rand.New(rand.NewPCG(35, uint64(bits)))
		m := shardmap.New(shardmap.WithShardBits(bits))
		kr := m.SoleWriter().Keyer()
		for pos := range 1100 {
			if pos%7 != 3 { // every seventh position has no table
				for k := range uint64(1 + r.IntN(40)) {
					shardmap.SoleOr(m, pos, k+1, 1)
				}
			}
		}
		addrs := make([]uintptr, 90)
		for step := range 2000 {
			pos := []int{0, 1, 3, 990, 1000, 1023, 1024, 1050}[r.IntN(8)]
			keys := make([]keyhash.Key, r.IntN(80))
			for i := range keys {
				keys[i] = kr.Key(uint64(r.IntN(60)))
				if keys[i] != m.SoleWriter().Key(keys[i].K) {
					t.Fatalf("Keyer().Key(%d) = %v, want %v", keys[i].K, keys[i], m.SoleWriter().Key(keys[i].K))
				}
			}
			for i := range addrs {
				addrs[i] = ^uintptr(0)
			}
			shardmap.BucketAddrs(m, pos, keys, addrs)
			for i, k := range keys {
				if want := shardmap.BucketAddr(m, pos+i, k); addrs[i] != want {
					t.Fatalf("step %d: BucketAddrs(%d, …)[%d] = %#x, want BucketAddr(%d, %d) = %#x", step, pos, i, addrs[i], pos+i, k.K, want)
				}
			}
			if len(keys) < len(addrs) && addrs[len(keys)] != ^uintptr(0) {
				t.Fatalf("step %d: BucketAddrs wrote past its %d keys", step, len(keys))
			}
		}
	}
}

// Writer.GetOrPut against a Go map: it returns a present value and calls
// nothing, or puts mk's value into an absent or deleted key (key 0 and
// positions past the inline ones included) and returns 0, calling mk once;
// for a sole writer and a shared one.
func TestWriter_GetOrPut(t *testing.T) {
	for _, kind := range []string{"sole", "shared"} {
		testGetOrPut(t, kind)
	}
}

func testGetOrPut(t *testing.T, kind string) {
	r := rand.New(rand.NewPCG(33, 34))
	m := shardmap.New(shardmap.WithShardBits(0))
	w := writers(m)[kind]
	ref := map[pk]uint64{}
	positions := []int{0, 1, 1023, 1024, 1500}
	for step := 0; step < 60000; step++ {
		k := pk{positions[r.IntN(len(positions))], uint64(r.IntN(3000))}
		if r.IntN(4) == 0 {
			m.Delete(k.pos, k.key)
			delete(ref, k)
			continue
		}
		v, calls := uint64(step)+1, 0
		got := w.GetOrPut(k.pos, w.Key(k.key), func() uint64 { calls++; return v })
		want, had := ref[k]
		if got != want || calls != 1-b2i(had) {
			t.Fatalf("%s: step %d: GetOrPut(%d, %d) = %d with %d calls, want %d (held: %v)", kind, step, k.pos, k.key, got, calls, want, had)
		}
		if !had {
			ref[k] = v
		}
		if step%1000 == 0 {
			for k, v := range ref {
				if got := m.Get(k.pos, k.key); got != v {
					t.Fatalf("step %d: Get(%d, %d) = %d, want %d", step, k.pos, k.key, got, v)
				}
			}
			if st := m.Stats(); st.Keys != len(ref) {
				t.Fatalf("step %d: %d live keys, want %d", step, st.Keys, len(ref))
			}
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Readers running beside a single writer that ORs bits into keys (growing
// the tables as it goes) see each key's value only gain bits, and every
// value they see is one the writer wrote.
func TestWriter_SoleOrConcurrentReaders(t *testing.T) {
	m := shardmap.New(shardmap.WithShardBits(0))
	const keys, rounds = 2000, 8
	var done atomic.Bool
	var wg sync.WaitGroup
	for rd := 0; rd < 2; rd++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := make([]uint64, keys)
			for !done.Load() {
				for k := range keys {
					v := m.Get(k%3, uint64(k)+1)
					if v&^(1<<rounds-1) != 0 || v&seen[k] != seen[k] {
						t.Errorf("key %d: %b after %b", k, v, seen[k])
						return
					}
					seen[k] = v
				}
			}
		}()
	}
	for b := range rounds {
		for k := range keys {
			shardmap.SoleOr(m, k%3, uint64(k)+1, 1<<b)
		}
	}
	done.Store(true)
	wg.Wait()
	for k := range keys {
		if v := m.Get(k%3, uint64(k)+1); v != 1<<rounds-1 {
			t.Fatalf("key %d: %b", k, v)
		}
	}
}

// Two writers' shards never share a cache line, and a level's table
// pointers, what every lookup reads, fill one.
func TestLayout(t *testing.T) {
	if shardmap.ShardSize != 64 || shardmap.LevelTabsSize != 64 {
		t.Fatalf("shard %d bytes, a level's table pointers %d; want 64 and 64", shardmap.ShardSize, shardmap.LevelTabsSize)
	}
	// A table header: readers' words on one line, the writer's counts on
	// the next, and every header on a line of its own (tables small and
	// large, carved from a reservation or not).
	if shardmap.TableSize != 128 || shardmap.TableUsed != 64 {
		t.Fatalf("table header %d bytes, its counts at %d; want 128 and 64", shardmap.TableSize, shardmap.TableUsed)
	}
	for _, reserve := range []int{0, 100000} {
		m := shardmap.New(shardmap.WithShardBits(0))
		if reserve > 0 {
			m.Reserve(reserve, 100)
		}
		for k := uint64(1); k <= 20000; k++ {
			shardmap.SoleOr(m, int(k%50)*(1+int(k%3)), k, 1)
		}
		tables := 0
		for pos := 0; pos < 150; pos++ {
			a := shardmap.TableAddr(m, pos, 1)
			if a%64 != 0 {
				t.Fatalf("reserve %d: the table at position %d starts at %#x, not on a line", reserve, pos, a)
			}
			tables += b2i(a != 0)
		}
		if tables < 100 {
			t.Fatalf("reserve %d: %d tables checked, want the 100 positions filled", reserve, tables)
		}
	}
}

// fillMallocs fills a new map, made and reserved by mk, with keys spread
// over positions by pos, and returns the fill's heap allocations (the least
// of three tries: the runtime allocates on its own now and then) and the
// last map.
func fillMallocs(mk func() *shardmap.Map, keys int, pos func(i int) int) (uint64, *shardmap.Map) {
	var m *shardmap.Map
	least := ^uint64(0)
	for range 3 {
		m = mk()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := 1; i <= keys; i++ {
			shardmap.SoleOr(m, pos(i), uint64(i)*0x9E3779B97F4A7C15, 1)
		}
		runtime.ReadMemStats(&after)
		least = min(least, after.Mallocs-before.Mallocs)
	}
	return least, m
}

// A map told ahead how many keys it will hold, and over how many
// positions, fills without allocating while its tables fit the
// reservation: its levels are made, and its tables carved from the
// reserved words (Reserve), at the positions a prompt's blocks take, most
// keys early; the keys read back as stored. A spread that needs more than
// the reservation (every key at one position: one large table and its
// earlier sizes) still fills correctly, allocating.
func TestMap_ReserveFillsWithoutAllocating(t *testing.T) {
	const keys, positions = 200000, 600
	// A prompt's blocks: keys fall off with depth, the density at position
	// p as 1/sqrt(p+1).
	pos := func(i int) int {
		x := uint64(i) * 0x9E3779B97F4A7C15 >> 44
		return int(uint64(positions) * x * x >> 40)
	}
	n, m := fillMallocs(func() *shardmap.Map {
		m := shardmap.New(shardmap.WithShardBits(0))
		m.Reserve(keys, positions)
		return m
	}, keys, pos)
	if n != 0 {
		t.Errorf("%d allocations filling a map reserved for its keys; stats %+v", n, m.Stats())
	}
	for i := 1; i <= keys; i++ {
		if got := m.Get(pos(i), uint64(i)*0x9E3779B97F4A7C15); got != 1 {
			t.Fatalf("key %d at %d reads %d", i, pos(i), got)
		}
	}
	if s := m.Stats(); s.Positions < positions || s.Tables < positions/2 {
		t.Fatalf("the keys' spread is not the test's: %+v", s)
	}
	unreserved, _ := fillMallocs(func() *shardmap.Map { return shardmap.New(shardmap.WithShardBits(0)) }, keys, pos)
	if unreserved == 0 {
		t.Fatal("a map with no reservation filled without allocating")
	}
	n, m = fillMallocs(func() *shardmap.Map {
		m := shardmap.New(shardmap.WithShardBits(0))
		m.Reserve(keys, 1)
		return m
	}, keys, func(int) int { return 0 })
	if n == 0 {
		t.Fatalf("one position's %d keys fit a reservation of %d words", keys, shardmap.ReserveWords*keys)
	}
	if s := m.Stats(); s.Keys != keys {
		t.Fatalf("one position: stats %+v", s)
	}
}

// What a reservation holds is reported (Stats.Reserved, in Bytes), and a
// reservation given back (Reserve with a negative count) is not made again
// by the next: a fleet whose workers come and go reserves for the workers
// it has at once.
func TestMap_ReserveAccounting(t *testing.T) {
	m := shardmap.New(shardmap.WithShardBits(0))
	empty := m.Stats()
	m.Reserve(1000, 0)
	s := m.Stats()
	if s.Reserved != 8*shardmap.ReserveWords*1000 || s.Bytes-empty.Bytes < s.Reserved || s.Positions != 0 {
		t.Fatalf("reserved 1000 keys: stats %+v, empty %+v", s, empty)
	}
	m.Reserve(-1000, 0)
	m.Reserve(1000, 0)
	if got := m.Stats(); got.Reserved != s.Reserved {
		t.Fatalf("1000 keys given back and reserved again: %d bytes reserved, want %d", got.Reserved, s.Reserved)
	}
	m.Reserve(500, 0)
	if got := m.Stats(); got.Reserved != 2*s.Reserved { // a piece as large as the one before
		t.Fatalf("500 keys more: %d bytes reserved, want %d", got.Reserved, 2*s.Reserved)
	}
	m.Reserve(0, 100)
	if got := m.Stats(); got.Positions < 100 {
		t.Fatalf("100 positions reserved: %d levels", got.Positions)
	}
	for i := uint64(1); i <= 200; i++ {
		shardmap.SoleOr(m, int(i%50), i, 1)
	}
	if got := m.Stats(); got.Reserved >= 2*s.Reserved || got.Keys != 200 {
		t.Fatalf("tables not carved from the reservation: %+v", got)
	}
}

// Many small reservations (a wide fleet's workers of small caches, each
// reserving on its own) hold a table larger than any one of them: pieces
// grow as the reservation does, so a first position's table, shared by
// every worker, is carved like the rest.
func TestMap_SmallReservationsHoldALargeTable(t *testing.T) {
	const workers, each = 200, 100
	n, m := fillMallocs(func() *shardmap.Map {
		m := shardmap.New(shardmap.WithShardBits(0))
		for range workers {
			m.Reserve(each, 8)
		}
		return m
	}, workers*each/2, func(int) int { return 0 })
	if n != 0 {
		t.Fatalf("%d allocations filling one position's table of %d keys, in %d reservations of %d: %+v",
			n, workers*each/2, workers, each, m.Stats())
	}
	if s := m.Stats(); s.Slots < workers*each/2 || s.Reserved > 8*(2*workers*each*shardmap.ReserveWords+1<<16) {
		t.Fatalf("stats %+v", s)
	}
}

// A table carved from a reservation that has more than half its words
// left grows 4× at every size, as small tables do: the room is the
// reservation's, and each generation skipped is a rebuild the writer does
// not pay. Without a reservation a table past quadrupleBelow slots grows
// 2×.
func TestMap_ReservedTablesGrowFourfold(t *testing.T) {
	slots := func(reserve int) int {
		m := shardmap.New(shardmap.WithShardBits(0))
		m.Reserve(reserve, 1)
		// 385 keys pass three quarters of 512 slots (8, 32, 128, 512:
		// 4× below 256).
		for i := 1; i <= 385; i++ {
			shardmap.SoleOr(m, 0, uint64(i)*0x9E3779B97F4A7C15, 1)
		}
		for i := 1; i <= 385; i++ {
			if got := m.Get(0, uint64(i)*0x9E3779B97F4A7C15); got != 1 {
				t.Fatalf("key %d reads %d", i, got)
			}
		}
		return m.Stats().Slots
	}
	if got := slots(0); got != 1024 {
		t.Errorf("unreserved: %d slots after growing past 512, want 1024", got)
	}
	if got := slots(10000); got != 2048 {
		t.Errorf("reserved for 10,000 keys: %d slots after growing past 512, want 2048", got)
	}
	// A reservation with less than half its words left (2,400 words for
	// 400 keys, 1,360 carved into the tables so far): 2×.
	if got := slots(400); got != 1024 {
		t.Errorf("reserved for 400 keys: %d slots after growing past 512, want 1024", got)
	}
}

// Range visits each key with a value once, with its value, in order of
// position (key 0 and positions past the inline ones included), and stops
// when f returns false.
func TestMap_Range(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 38))
	m := shardmap.New()
	ref := map[pk]uint64{}
	for range 20000 {
		k := pk{[]int{0, 3, 1023, 1024, 1700}[r.IntN(5)], uint64(r.IntN(2000))}
		if r.IntN(4) == 0 {
			m.Delete(k.pos, k.key)
			delete(ref, k)
			continue
		}
		v := uint64(1 + r.IntN(1000))
		m.Put(k.pos, k.key, v)
		ref[k] = v
	}
	got, last := map[pk]uint64{}, 0
	m.Range(func(pos int, key, val uint64) bool {
		if _, twice := got[pk{pos, key}]; twice || pos < last {
			t.Fatalf("Range visited (%d, %d) twice or out of order (after position %d)", pos, key, last)
		}
		got[pk{pos, key}], last = val, pos
		return true
	})
	if !maps.Equal(got, ref) {
		t.Fatalf("Range visited %d keys, want %d (or values differ)", len(got), len(ref))
	}
	n := 0
	m.Range(func(int, uint64, uint64) bool { n++; return n < 10 })
	if n != 10 {
		t.Fatalf("Range went on for %d keys after f returned false at the 10th", n)
	}
}
