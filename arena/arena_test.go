package arena_test

import (
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/flashindexer/flashindexer/arena"
	"github.com/flashindexer/flashindexer/bitset"
)

type live struct {
	seq  uint64
	bits map[int]bool
}

// run applies ops decoded from src to an arena and to a map of live slots,
// checking after every op.
func runModel(t testing.TB, bitWords int, next func(n int) int, steps int) {
	a := arena.New(bitWords)
	als := []*arena.Allocator{a.NewAllocator(), a.NewAllocator()}
	ref := map[arena.Handle]*live{}
	var handles []arena.Handle
	var dead []arena.Handle
	seen := map[arena.Ref]arena.Handle{}
	for step := 0; step < steps; step++ {
		al := als[next(2)]
		switch op := next(10); {
		case op < 4 || len(handles) == 0:
			seq := uint64(next(1 << 16))
			h := al.Alloc(seq)
			if _, ok := ref[h]; ok {
				t.Fatalf("step %d: handle %x handed out twice", step, h)
			}
			if old, ok := seen[h.Ref()]; ok && old.Version() >= h.Version() {
				t.Fatalf("step %d: slot %d reused with version %d after %d", step, h.Ref(), h.Version(), old.Version())
			}
			seen[h.Ref()] = h
			ref[h] = &live{seq: seq, bits: map[int]bool{}}
			handles = append(handles, h)
		case op < 6:
			i := next(len(handles))
			h := handles[i]
			if !al.Free(h) {
				t.Fatalf("step %d: Free of a live handle failed", step)
			}
			delete(ref, h)
			handles[i] = handles[len(handles)-1]
			handles = handles[:len(handles)-1]
			dead = append(dead, h)
		case op < 8:
			h := handles[next(len(handles))]
			b := next(bitWords * 64)
			bitset.AtomicSet(arena.Bits(a.Slot(h.Ref())), b)
			ref[h].bits[b] = true
		default:
			if len(dead) > 0 {
				h := dead[next(len(dead))]
				if al.Free(h) {
					t.Fatalf("step %d: double free of %x accepted", step, h)
				}
			}
		}
		for _, h := range dead {
			if arena.Current(a.Slot(h.Ref()), h) {
				t.Fatalf("step %d: dead handle %x still current", step, h)
			}
		}
		for h, l := range ref {
			s := a.Slot(h.Ref())
			if !arena.Current(s, h) || arena.Seq(s) != l.seq {
				t.Fatalf("step %d: slot %x lost its content", step, h)
			}
			if bitset.Count(arena.Bits(s)) != len(l.bits) {
				t.Fatalf("step %d: slot %x bits", step, h)
			}
		}
	}
	st := a.Stats()
	if st.LiveSlots != uint64(len(ref)) {
		t.Fatalf("LiveSlots %d, want %d", st.LiveSlots, len(ref))
	}
	if st.LiveSlots+st.FreeSlots > st.ReservedSlots {
		t.Fatalf("accounting: %+v", st)
	}
}

func TestArena_RandomOps(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		r := rand.New(rand.NewPCG(seed, 5))
		runModel(t, int(seed), r.IntN, 3000)
	}
}

func FuzzArena(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 4, 4, 9, 9, 0, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		// Every step checks every live slot: cap the steps so that one long
		// input does not stall the fuzzer for seconds.
		data = data[:min(len(data), 4096)]
		next := func(n int) int {
			if len(data) == 0 {
				return 0
			}
			v := int(data[0])
			data = data[1:]
			return v % n
		}
		runModel(t, 2, next, len(data)/2)
	})
}

func TestArena_GrowthKeepsSlots(t *testing.T) {
	a := arena.New(1)
	al := a.NewAllocator()
	var hs []arena.Handle
	for i := 0; i < 100_000; i++ {
		hs = append(hs, al.Alloc(uint64(i)))
	}
	for i, h := range hs {
		if arena.Seq(a.Slot(h.Ref())) != uint64(i) {
			t.Fatalf("slot %d moved or lost", i)
		}
	}
	if st := a.Stats(); st.ReservedSlots < 100_000 || st.LiveSlots != 100_000 {
		t.Fatalf("stats %+v", st)
	}
}

// Freed slots are reused: churn does not grow the arena.
func TestArena_ChurnBounded(t *testing.T) {
	a := arena.New(2)
	al1, al2 := a.NewAllocator(), a.NewAllocator()
	var hs []arena.Handle
	for i := 0; i < 10_000; i++ {
		hs = append(hs, al1.Alloc(1))
	}
	before := a.Stats().ReservedSlots
	for round := 0; round < 50; round++ {
		// One writer frees, the other allocates: the shared pool moves slots.
		for i := range hs {
			al1.Free(hs[i])
		}
		for i := range hs {
			hs[i] = al2.Alloc(2)
		}
		al1, al2 = al2, al1
	}
	if after := a.Stats().ReservedSlots; after > 2*before+4096 {
		t.Fatalf("reserved slots grew from %d to %d under churn", before, after)
	}
}

// Readers hold handles across frees and reuses: whenever a reader's
// validation passes, what it read is the content of that life.
func TestArena_ReadersAcrossReuse(t *testing.T) {
	a := arena.New(2)
	const n = 64
	var table [n]atomic.Uint64 // published handles, as a map would hold them
	var stop atomic.Bool
	var writers, readers sync.WaitGroup
	var mu sync.Mutex // writers serialize slot writes per table entry, as flash does per shard
	var checked, stale atomic.Int64
	var reads atomic.Int64 // reader passes over the table
	writes := 20_000
	if testing.Short() || raceEnabled {
		writes = 3_000
	}
	for w := 0; w < 2; w++ {
		writers.Add(1)
		go func() {
			defer writers.Done()
			al := a.NewAllocator()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; i < writes; i++ {
				k := r.IntN(n)
				mu.Lock()
				old := arena.Handle(table[k].Load())
				// Content derived from the life: seq = handle, one bit from the handle.
				h := al.Alloc(0)
				s := a.Slot(h.Ref())
				atomic.StoreUint64(&s[arena.WordSeq], uint64(h))
				bitset.AtomicSet(arena.Bits(s), int(uint64(h)%128))
				table[k].Store(uint64(h))
				if old != 0 {
					al.Free(old)
				}
				mu.Unlock()
				if i%256 == 255 {
					// Wait for the readers to make progress, so that their
					// reads interleave with the writes however few cores
					// the scheduler gives them.
					for seen := reads.Load(); reads.Load() == seen; {
						runtime.Gosched()
					}
				}
			}
		}()
	}
	for rd := 0; rd < 2; rd++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for !stop.Load() {
				for k := range table {
					h := arena.Handle(table[k].Load())
					if h == 0 {
						continue
					}
					s := a.Slot(h.Ref())
					if !arena.Current(s, h) {
						stale.Add(1)
						continue
					}
					seq := arena.Seq(s)
					bit := bitset.AtomicTest(arena.Bits(s), int(uint64(h)%128))
					if !arena.Current(s, h) {
						stale.Add(1)
						continue
					}
					if seq != uint64(h) || !bit {
						panic("validated read saw another life's content")
					}
					checked.Add(1)
				}
				reads.Add(1)
			}
		}()
	}
	writers.Wait()
	stop.Store(true)
	readers.Wait()
	if checked.Load() == 0 {
		t.Fatal("readers validated nothing")
	}
	t.Logf("validated reads %d, stale detected %d", checked.Load(), stale.Load())
}

func TestArena_ZeroAllocs(t *testing.T) {
	a := arena.New(16)
	al := a.NewAllocator()
	h := al.Alloc(1)
	al.Free(h)
	if n := testing.AllocsPerRun(1000, func() {
		h := al.Alloc(7)
		s := a.Slot(h.Ref())
		bitset.AtomicSet(arena.Bits(s), 100)
		_ = arena.Current(s, h)
		al.Free(h)
	}); n != 0 {
		t.Fatalf("%v allocations per alloc/free", n)
	}
}

// scannable returns the bytes of heap the garbage collector has to scan.
func scannable() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// The arena's size does not add to the GC's scan work: slabs are pointer-free.
func TestArena_GCScanIndependentOfSize(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 10M slots")
	}
	measure := func(slots int) (reserved, scan uint64) {
		base := scannable()
		a := arena.New(1)
		al := a.NewAllocator()
		for i := 0; i < slots; i++ {
			al.Alloc(uint64(i))
		}
		// A heap that shrank meanwhile (other tests' garbage) counts as
		// no growth, not as a wrapped-around unsigned difference.
		after := scannable()
		scan = after - min(base, after)
		reserved = a.Stats().ReservedBytes
		runtime.KeepAlive(a)
		return reserved, scan
	}
	smallRes, smallScan := measure(10_000)
	bigRes, bigScan := measure(10_000_000)
	t.Logf("10K slots: %d bytes reserved, +%d scannable; 10M slots: %d bytes reserved, +%d scannable", smallRes, smallScan, bigRes, bigScan)
	if bigRes < 10_000_000*8*(arena.Header+1) { // every slot reserved
		t.Fatalf("10M slots reserved only %d bytes", bigRes)
	}
	if bigScan > smallScan+64<<10 {
		t.Fatalf("GC scan work grew with the arena: +%d bytes for 10M slots vs +%d for 10K", bigScan, smallScan)
	}
}

// AllocWith publishes a slot holding exactly its worker, fresh or reused,
// with a current handle; a handle of the slot's earlier life stays stale.
func TestArena_AllocWith(t *testing.T) {
	a := arena.New(2) // 128 workers
	al := a.NewAllocator()
	check := func(h arena.Handle, seq uint64, w int) {
		t.Helper()
		s := a.Slot(h.Ref())
		if !arena.Current(s, h) || arena.Seq(s) != seq {
			t.Fatalf("slot %v: current %v, seq %d", h, arena.Current(s, h), arena.Seq(s))
		}
		for i := 0; i < 128; i++ {
			if got := bitset.AtomicTest(arena.Bits(s), i); got != (i == w) {
				t.Fatalf("slot %v: worker %d set %v, want only %d", h, i, got, w)
			}
		}
	}
	h1 := al.AllocWith(7, 100)
	check(h1, 7, 100)
	h2 := al.AllocWith(8, 3)
	check(h2, 8, 3)
	// Reuse: the slot comes back from the free list, emptied.
	bitset.AtomicClear(arena.Bits(a.Slot(h1.Ref())), 100)
	if !al.Free(h1) {
		t.Fatal("free failed")
	}
	h3 := al.AllocWith(9, 64)
	if h3.Ref() != h1.Ref() {
		t.Fatalf("slot not reused: %v after %v", h3, h1)
	}
	check(h3, 9, 64)
	if arena.Current(a.Slot(h1.Ref()), h1) {
		t.Fatal("the freed life's handle is current again")
	}
	h4 := al.Alloc(10)
	check(h4, 10, -1)
}

// Every handed-out slot has words of its own: slots written whole, across
// every part the arena reserves, read back unchanged.
func TestArena_SlotsDisjoint(t *testing.T) {
	const n = 300_000
	a := arena.New(2)
	als := []*arena.Allocator{a.NewAllocator(), a.NewAllocator()}
	hs := make([]arena.Handle, n)
	for i := range hs {
		hs[i] = als[i%7%2].Alloc(uint64(i))
	}
	mark := func(i, j int) uint64 { return uint64(i)<<8 | uint64(j) | 1<<63 }
	for i, h := range hs {
		s := a.Slot(h.Ref())
		for j := arena.Header; j < len(s); j++ {
			atomic.StoreUint64(&s[j], mark(i, j))
		}
	}
	for i, h := range hs {
		s := a.Slot(h.Ref())
		if len(s) != a.Stride() || arena.Seq(s) != uint64(i) {
			t.Fatalf("slot %d: stride %d, seq %d", i, len(s), arena.Seq(s))
		}
		for j := arena.Header; j < len(s); j++ {
			if v := atomic.LoadUint64(&s[j]); v != mark(i, j) {
				t.Fatalf("slot %d word %d holds %#x: another slot's", i, j, v)
			}
		}
	}
}

// The arena reserves memory in steps of an eighth of what it holds: a slot
// count just past a power of two does not reserve twice what it uses.
func TestArena_ReservesInEighths(t *testing.T) {
	for _, n := range []int{1, 1000, 1025, 5000, 100_000, 131_073, 140_000, 179_036, 300_000} {
		a := arena.New(1)
		al := a.NewAllocator()
		for i := 0; i < n; i++ {
			al.Alloc(uint64(i))
		}
		st := a.Stats()
		// Allocators take 256 slots at a time from the arena.
		handed := uint64((n + 255) / 256 * 256)
		if limit := handed + (handed+1024)/8; st.ReservedSlots < handed || st.ReservedSlots > limit {
			t.Errorf("%d slots: %d reserved, want %d to %d", n, st.ReservedSlots, handed, limit)
		}
	}
}

// A handle's top bit is 0 whatever its slot's version, so that a table value
// can carry a tag there (package entry); a slot whose version passed 2^31
// still names, validates and frees through its handles.
func TestArena_HandleTopBitClear(t *testing.T) {
	a := arena.New(4)
	al := a.NewAllocator()
	h := al.AllocWith(7, 3)
	if !al.Free(h) {
		t.Fatal("Free of a fresh handle failed")
	}
	s := a.Slot(h.Ref())
	atomic.StoreUint64(&s[arena.WordVersion], 1<<31|5) // freed, past 2^31
	h2 := al.AllocWith(9, 200)
	if h2.Ref() != h.Ref() {
		t.Fatalf("reused ref %d, want %d", h2.Ref(), h.Ref())
	}
	if h2>>63 != 0 {
		t.Fatalf("handle %#x has its top bit set", uint64(h2))
	}
	if !arena.Current(a.Slot(h2.Ref()), h2) || arena.Current(a.Slot(h2.Ref()), h) {
		t.Fatal("Current: the new handle must name the slot, the old one must not")
	}
	if al.Free(h) {
		t.Fatal("Free of a stale handle succeeded")
	}
	if !al.Free(h2) || arena.Current(a.Slot(h2.Ref()), h2) {
		t.Fatal("Free of the current handle failed")
	}
}

// Room set aside by Reserve holds that many live slots, handed out by every
// allocator, with no allocation; room given back is reserved again first.
func TestArena_ReserveFillsWithoutAllocating(t *testing.T) {
	const n = 50_000
	fill := func(a *arena.Arena, als []*arena.Allocator) uint64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.Mallocs
		for i := range n {
			als[i*7/n%len(als)].AllocWith(uint64(i), i%200)
		}
		runtime.ReadMemStats(&ms)
		return ms.Mallocs - before
	}
	// The count is the process's, which the runtime may add to meanwhile
	// (a race build's does, and 1 run in some dozens of others' did): the
	// fewest of up to three fills, each of a new reservation. The reserved
	// slots show that the arena made no part in every fill.
	var a *arena.Arena
	var reserved uint64
	got := ^uint64(0)
	for try := 0; try < 3 && got != 0; try++ {
		a = arena.New(4)
		als := []*arena.Allocator{a.NewAllocator(), a.NewAllocator(), a.NewAllocator()}
		a.Reserve(n)
		if reserved = a.Stats().ReservedSlots; reserved < n {
			t.Fatalf("%d slots reserved for %d", reserved, n)
		}
		got = min(got, fill(a, als))
		if st := a.Stats(); st.LiveSlots != n || st.ReservedSlots != reserved {
			t.Fatalf("after the fill: %d live, %d reserved; want %d, %d", st.LiveSlots, st.ReservedSlots, n, reserved)
		}
	}
	if got != 0 && !raceEnabled {
		t.Errorf("filling a reservation of %d slots allocated %v times", n, got)
	}
	// Given back and taken again: no more parts.
	a.Reserve(-n)
	a.Reserve(n)
	if got := a.Stats().ReservedSlots; got != reserved {
		t.Errorf("room given back and reserved again: %d slots reserved, want %d", got, reserved)
	}

	// The same fill with no reservation grows the arena as it goes.
	b := arena.New(4)
	if got := fill(b, []*arena.Allocator{b.NewAllocator(), b.NewAllocator(), b.NewAllocator()}); got == 0 {
		t.Errorf("a fill with no reservation allocated nothing: the test measures nothing")
	}
}
