package lane

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/flashindexer/flashindexer/arena"
	"github.com/flashindexer/flashindexer/flash/internal/entry"
	"github.com/flashindexer/flashindexer/flash/internal/slotdir"
	"github.com/flashindexer/flashindexer/flash/internal/worker"
	"github.com/flashindexer/flashindexer/shardmap"
)

func TestCheck(t *testing.T) {
	b := []worker.Block{{Hash: 1, Local: 1}, {Hash: 2, Local: 2}}
	for _, c := range []struct {
		ev   Event
		want error
	}{
		{Event{Kind: Stored, Blocks: b}, nil},
		{Event{Kind: Stored}, ErrEmptyEvent},
		{Event{Kind: Stored, Blocks: append(b, b[0])}, ErrBatchTooLarge},
		{Event{Kind: Stored, Hashes: []uint64{1}}, ErrEmptyEvent},
		{Event{Kind: Removed, Hashes: []uint64{1, 2}}, nil},
		{Event{Kind: Removed, Blocks: b}, ErrEmptyEvent},
		{Event{Kind: Removed, Hashes: []uint64{1, 2, 3}}, ErrBatchTooLarge},
		{Event{Kind: Cleared}, nil},
		{Event{Kind: 0}, ErrBadKind},
		{Event{Kind: 4, Blocks: b}, ErrBadKind},
		{Event{Kind: Stored, Blocks: b, Tier: 1}, nil},
		{Event{Kind: Stored, Blocks: b, Tier: 2}, ErrBadTier},
		{Event{Kind: Stored, Tier: 2}, ErrBadTier},
		{Event{Kind: Removed, Hashes: []uint64{1}, Tier: 5}, ErrBadTier},
		{Event{Kind: Cleared, Tier: 2}, nil}, // every tier
		{Event{Kind: Cleared, Tier: 2, TierOnly: true}, ErrBadTier},
		{Event{Kind: Cleared, Tier: 1, TierOnly: true}, nil},
	} {
		if got := Check(&c.ev, 2, 2); got != c.want {
			t.Errorf("Check(kind %d, %d blocks, %d hashes) = %v, want %v", c.ev.Kind, len(c.ev.Blocks), len(c.ev.Hashes), got, c.want)
		}
	}
}

// prefetchEvent asks for the first bytes of what the writer reads first:
// a Stored event's blocks, any other's hashes, up to prefetchEventBytes;
// nothing for an empty one.
func TestPrefetchEvent_Lines(t *testing.T) {
	blocks := make([]worker.Block, 200)
	hashes := make([]uint64, 300)
	addr := func(p unsafe.Pointer) uintptr { return uintptr(p) }
	for _, c := range []struct {
		ev      Event
		at, len uintptr
	}{
		{Event{Kind: Stored}, 0, 0},
		{Event{Kind: Stored, Blocks: blocks[:1], Hashes: hashes}, addr(unsafe.Pointer(&blocks[0])), 16},
		{Event{Kind: Stored, Blocks: blocks[3:6]}, addr(unsafe.Pointer(&blocks[3])), 48},
		{Event{Kind: Stored, Blocks: blocks}, addr(unsafe.Pointer(&blocks[0])), prefetchEventBytes},
		{Event{Kind: Removed}, 0, 0},
		{Event{Kind: Removed, Hashes: hashes[:3], Blocks: blocks}, addr(unsafe.Pointer(&hashes[0])), 24},
		{Event{Kind: Removed, Hashes: hashes}, addr(unsafe.Pointer(&hashes[0])), prefetchEventBytes},
		{Event{Kind: Cleared}, 0, 0},
	} {
		if at, n := eventLines(&c.ev); at != c.at || n != c.len {
			t.Fatalf("%v event of %d blocks, %d hashes: asks for %d bytes at %#x, want %d at %#x", c.ev.Kind, len(c.ev.Blocks), len(c.ev.Hashes), n, at, c.len, c.at)
		}
	}
}

func TestFor_Range(t *testing.T) {
	for _, lanes := range []int{0, 1, 3, 8} {
		seen := map[int]int{}
		for id := range uint64(4096) {
			l := For(id, lanes)
			if l < 0 || l >= max(lanes, 1) {
				t.Fatalf("For(%d, %d) = %d", id, lanes, l)
			}
			seen[l]++
		}
		if len(seen) != max(lanes, 1) {
			t.Errorf("%d lanes: ids went to %d of them", lanes, len(seen))
		}
	}
}

func newSyncSet(lanes, workers int, onReject func(*Event, error)) *Set {
	sets := &entry.Sets{Arena: arena.New(1), Inline: true}
	return New(Options{
		Lanes: lanes, Sync: true, MaxDepth: 64, MaxBatch: 8, Sets: sets,
		Tabs: []*shardmap.Map{shardmap.New()}, Preds: []*shardmap.Map{shardmap.New()}, Dir: slotdir.New(workers, 1), OnReject: onReject,
		MaxPredicted: 16, Clock: Monotonic,
	})
}

// A rejected event is counted under EventsRejected, its reason and its
// kind, even when the error is wrapped, and reaches the handler as a copy.
func TestSet_RejectCounts(t *testing.T) {
	var got []error
	s := newSyncSet(2, 1, func(ev *Event, err error) { got = append(got, err) })
	w0, w1 := Worker{ID: 1}, Worker{ID: 2}
	b := []worker.Block{{Hash: 10, Local: 10}}
	for _, ev := range []Event{
		{Kind: Stored, Worker: w0, Blocks: b},                              // applied
		{Kind: Stored, Worker: w0, Blocks: b, Parent: 99, HasParent: true}, // unknown parent
		{Kind: Stored, Worker: w1, Blocks: b},                              // no slot left
		{Kind: Removed, Worker: w0},                                        // empty
		{Kind: 9, Worker: w0},                                              // bad kind
	} {
		_ = s.Apply(&ev, false)
	}
	var c Counts
	s.Counts(&c)
	want := map[Counter]uint64{
		EventsApplied: 1, StoredApplied: 1, BlocksStored: 1, EventsRejected: 4,
		RejectedUnknownParent: 1, RejectedTooManyWorkers: 1, RejectedEmpty: 1, RejectedBadKind: 1,
		StoredRejected: 2, RemovedRejected: 1,
	}
	for i := range NumCounters {
		if c[i] != want[i] {
			t.Errorf("counter %d = %d, want %d", i, c[i], want[i])
		}
	}
	if len(got) != 4 {
		t.Errorf("handler saw %d rejections, want 4", len(got))
	}
	if s.Close() != nil || s.Close() != ErrClosed {
		t.Error("second Close did not return ErrClosed")
	}
	ev := Event{Kind: Cleared, Worker: w0}
	if err := s.Apply(&ev, false); err != ErrClosed {
		t.Errorf("Apply after Close: %v", err)
	}
	var t2 Tally
	t2.reject(Stored, fmt.Errorf("wrapped: %w", ErrQueueFull))
	if t2[RejectedQueueFull].Load() != 1 || t2[StoredRejected].Load() != 1 {
		t.Error("a wrapped error was not counted under its reason")
	}
}

// The directory follows slots: a worker is in it from its first valid
// event until RemoveWorker, which frees its slot for another.
func TestSet_Directory(t *testing.T) {
	s := newSyncSet(1, 1, nil)
	b := []worker.Block{{Hash: 10, Local: 10}}
	ev := Event{Kind: Stored, Worker: Worker{ID: 1, DPRank: 3}, Blocks: b}
	if err := s.Apply(&ev, false); err != nil {
		t.Fatal(err)
	}
	if d := slices.Collect(s.Directory().All()); len(d) != 1 || d[0] != (DirEntry{ev.Worker, 0}) {
		t.Fatalf("directory %v", d)
	}
	if err := s.RemoveWorker(1); err != nil {
		t.Fatal(err)
	}
	if d := s.Directory(); d.Len() != 0 {
		t.Fatalf("directory after RemoveWorker: %v", slices.Collect(d.All()))
	}
	ev.Worker = Worker{ID: 2}
	if err := s.Apply(&ev, false); err != nil {
		t.Fatalf("the freed slot was not given again: %v", err)
	}
}

// The directory against a Go map through random adds, moves and removals
// (workers sharing IDs across ranks): the same entries, in order, each
// found by Slot, and an absent worker not found.
func TestDirectory_AgainstMap(t *testing.T) {
	s := newSyncSet(1, 1, nil)
	r := rand.New(rand.NewPCG(3, 4))
	ref := map[Worker]int32{}
	for step := range 3000 {
		w := Worker{ID: uint64(r.IntN(40)), DPRank: uint32(r.IntN(3))}
		slot := int32(r.IntN(100))
		if r.IntN(3) == 0 {
			slot = -1
			delete(ref, w)
		} else {
			ref[w] = slot
		}
		s.setDirectory(w, slot)
		dir := s.Directory()
		d := slices.Collect(dir.All())
		if len(d) != len(ref) || dir.Len() != len(ref) {
			t.Fatalf("step %d: %d entries (Len %d), want %d", step, len(d), dir.Len(), len(ref))
		}
		for i, e := range d {
			if i > 0 && !d[i-1].W.less(e.W) {
				t.Fatalf("step %d: %v before %v", step, d[i-1].W, e.W)
			}
			if want, ok := ref[e.W]; !ok || want != e.Slot {
				t.Fatalf("step %d: %v at slot %d, want %d (%v)", step, e.W, e.Slot, want, ok)
			}
			if got, ok := dir.Slot(e.W); !ok || got != e.Slot {
				t.Fatalf("step %d: Slot(%v) = %d, %v", step, e.W, got, ok)
			}
		}
		x := Worker{ID: uint64(r.IntN(40)), DPRank: uint32(r.IntN(3))}
		want, in := ref[x]
		if got, ok := dir.Slot(x); ok != in || ok && got != want {
			t.Fatalf("step %d: Slot(%v) = %d, %v; want %d, %v", step, x, got, ok, want, in)
		}
	}
}
