package kvevents

import (
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
	"unsafe"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/kvevents/kvtest"
)

func tokensOf(n int, base uint32) []uint32 {
	t := make([]uint32, n)
	for i := range t {
		t[i] = base + uint32(i)
	}
	return t
}

func TestDecode_AllKindsAndFields(t *testing.T) {
	big := make([]byte, 32) // a 256-bit hash: the low 64 bits are the last 8 bytes
	binary.BigEndian.PutUint64(big[24:], 0xdeadbeefcafe0001)
	big[0] = 0xff
	payload := kvtest.Encode(1712.5, []any{
		kvtest.Stored([]uint64{1, 1 << 63}, nil, tokensOf(32, 7), 16, nil, "GPU", nil),
		kvtest.Stored([]any{int64(-2), big, []byte{1, 2}}, uint64(1<<63), tokensOf(48, 0), 16, 3, "cpu", "adapter-a", "extra", []any{1, 2}),
		kvtest.Stored([]uint64{9}, int64(-5), tokensOf(16, 1), 16), // older engines: no trailing fields
		kvtest.Removed([]uint64{1, 5}, "GPU"),
		kvtest.Removed([]any{big}),
		kvtest.Cleared(),
		[]any{"SomethingNew", 1, "x"},
	}, 3, false)
	var b Batch
	if err := Decode(payload, &b); err != nil {
		t.Fatal(err)
	}
	if b.TS != 1712.5 || !b.HasDPRank || b.DPRank != 3 || len(b.Events) != 6 || b.Unknown != 1 {
		t.Fatalf("batch: ts %v rank %v/%v events %d, unknown %d", b.TS, b.DPRank, b.HasDPRank, len(b.Events), b.Unknown)
	}
	e := b.Events
	if e[0].Kind != flash.KindStored || len(e[0].Hashes) != 2 || e[0].Hashes[1] != 1<<63 || e[0].HasParent ||
		len(e[0].Tokens) != 32 || e[0].Tokens[31] != 38 || e[0].BlockSize != 16 || e[0].HasLoRAID || string(e[0].Medium) != "GPU" || e[0].LoRAName != nil || !e[0].OnGPU() {
		t.Fatalf("event 0: %+v", e[0])
	}
	if e[1].Hashes[0] != uint64(0xfffffffffffffffe) || e[1].Hashes[1] != 0xdeadbeefcafe0001 || e[1].Hashes[2] != 0x0102 ||
		!e[1].HasParent || e[1].Parent != 1<<63 || !e[1].HasLoRAID || e[1].LoRAID != 3 || e[1].OnGPU() || string(e[1].LoRAName) != "adapter-a" {
		t.Fatalf("event 1: %+v", e[1])
	}
	if !e[2].HasParent || e[2].Parent != uint64(0xfffffffffffffffb) || e[2].Medium != nil || !e[2].OnGPU() {
		t.Fatalf("event 2: %+v", e[2])
	}
	if e[3].Kind != flash.KindRemoved || len(e[3].Hashes) != 2 || e[3].Hashes[1] != 5 || string(e[3].Medium) != "GPU" {
		t.Fatalf("event 3: %+v", e[3])
	}
	if e[4].Kind != flash.KindRemoved || e[4].Hashes[0] != 0xdeadbeefcafe0001 || e[4].Medium != nil {
		t.Fatalf("event 4: %+v", e[4])
	}
	if e[5].Kind != flash.KindCleared {
		t.Fatalf("event 5: %+v", e[5])
	}
	// A nil list of events is an empty one.
	if err := Decode(kvtest.Encode(1, nil, 0, false), &b); err != nil || len(b.Events) != 0 {
		t.Fatalf("nil events: %v, %d events", err, len(b.Events))
	}
	// The rank omitted, or nil.
	for _, omit := range []bool{true, false} {
		if err := Decode(kvtest.Encode(1, []any{kvtest.Cleared()}, nil, omit), &b); err != nil || b.HasDPRank {
			t.Fatalf("omit %v: %v, rank %v", omit, err, b.HasDPRank)
		}
	}
}

// Every truncation of a valid payload, and a few forged ones, is
// ErrMalformed; nothing panics.
func TestDecode_Malformed(t *testing.T) {
	payload := kvtest.Encode(1, []any{
		kvtest.Stored([]uint64{1, 2}, uint64(3), tokensOf(32, 0), 16, nil, "GPU", "l"),
		kvtest.Removed([]uint64{1}),
	}, 0, false)
	var b Batch
	for n := 0; n < len(payload); n++ {
		if err := Decode(payload[:n], &b); !errors.Is(err, ErrMalformed) {
			t.Fatalf("prefix %d: %v", n, err)
		}
	}
	forged := [][]byte{
		{0xdd, 0xff, 0xff, 0xff, 0xff},                // an array of 4G elements
		{0x92, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0x07},    // events not an array
		{0x92, 0xa1, 'x', 0x90},                       // a string timestamp
		{0x91, 0x01},                                  // one field
		append(append([]byte{}, payload...), 0x00),    // trailing bytes
		{0x92, 0x01, 0x91, 0x92, 0xab, 'B', 'l', 'o'}, // a cut tag
		{0x92, 0x01, 0x91, 0x91, 0x07},                // a tag that is not a string
		kvtest.Encode(1, []any{kvtest.Stored([]uint64{1}, nil, []int64{-1}, 16)}, 0, false),      // a negative token
		kvtest.Encode(1, []any{kvtest.Stored([]uint64{1}, nil, []int64{1 << 40}, 16)}, 0, false), // a token beyond 32 bits
		kvtest.Encode(1, []any{kvtest.Stored([]uint64{1}, nil, nil, 16)}, -1, false),             // a negative rank
		kvtest.Encode(1, []any{[]any{"BlockStored", []uint64{1}}}, 0, false),                     // too few fields
	}
	for i, p := range forged {
		if err := Decode(p, &b); !errors.Is(err, ErrMalformed) {
			t.Fatalf("forged %d: %v", i, err)
		}
		var de *DecodeError
		if !errors.As(Decode(p, &b), &de) || de.Error() == "" {
			t.Fatalf("forged %d: not a *DecodeError", i)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(kvtest.Encode(1, []any{
		kvtest.Stored([]uint64{1, 2}, uint64(3), tokensOf(32, 0), 16, 1, "GPU", "l", 9),
		kvtest.Removed([]any{[]byte{1, 2, 3}}, nil), kvtest.Cleared(), []any{"X", map[string]int{"a": 1}},
	}, 2, false))
	f.Add([]byte{0x92, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0x90})
	f.Add(forgedEvents(64))
	tr := NewTranslator(16)
	f.Fuzz(func(t *testing.T, p []byte) {
		var b Batch
		err := Decode(p, &b)
		if got, bound := retained(&b), allocBound(len(p)); got > bound {
			t.Fatalf("a payload of %d bytes allocated %d bytes, bound %d", len(p), got, bound)
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for i := range b.Events {
			ev, ok, err := tr.Event(flash.Worker{ID: 1}, &b.Events[i])
			if err != nil || !ok {
				continue
			}
			if ev.Kind == flash.KindStored && len(ev.Blocks) != len(b.Events[i].Hashes) {
				t.Fatalf("%d blocks from %d hashes", len(ev.Blocks), len(b.Events[i].Hashes))
			}
		}
	})
}

// Local hashes come out as a router computes them for a query
// (flash.TokenHasher), under the LoRA adapter's seed.
func TestTranslator_LocalHashesMatchTheRouters(t *testing.T) {
	toks := tokensOf(64, 100)
	cases := []struct {
		extra []any
		lora  string
	}{
		{nil, ""},
		{[]any{nil, "GPU", nil}, ""},
		{[]any{7, "GPU", "adapter-a"}, "adapter-a"},
		{[]any{7, "GPU"}, "7"}, // only an id: its decimal form names the adapter
		{[]any{7, "GPU", ""}, "7"},
	}
	tr := NewTranslator(16)
	for i, c := range cases {
		var b Batch
		if err := Decode(kvtest.Encode(0, []any{kvtest.Stored([]uint64{11, 12, 13, 14}, uint64(10), toks, 16, c.extra...)}, nil, true), &b); err != nil {
			t.Fatal(err)
		}
		w := flash.Worker{ID: 5, DPRank: 1}
		ev, ok, err := tr.Event(w, &b.Events[0])
		if err != nil || !ok {
			t.Fatalf("case %d: %v %v", i, ok, err)
		}
		want := flash.NewTokenHasher(16, c.lora).LocalHashes(nil, toks)
		if ev.Worker != w || !ev.HasParent || ev.Parent != 10 || len(ev.Blocks) != 4 {
			t.Fatalf("case %d: %+v", i, ev)
		}
		for j, blk := range ev.Blocks {
			if blk.Local != want[j] || blk.Hash != flash.ExternalHash(11+j) {
				t.Fatalf("case %d block %d: %+v, want local %x", i, j, blk, want[j])
			}
		}
	}
	var b Batch
	_ = Decode(kvtest.Encode(0, []any{
		kvtest.Stored([]uint64{1, 2}, nil, tokensOf(31, 0), 16),
		kvtest.Stored([]uint64{1, 2}, nil, tokensOf(64, 0), 32),
	}, nil, true), &b)
	if _, _, err := tr.Event(flash.Worker{}, &b.Events[0]); !errors.Is(err, ErrTokenCount) {
		t.Fatalf("31 tokens for 2 blocks: %v", err)
	}
	if _, _, err := tr.Event(flash.Worker{}, &b.Events[1]); !errors.Is(err, ErrBlockSize) {
		t.Fatalf("block size 32 for a 16 index: %v", err)
	}
}

// Decoding and translating a batch allocates nothing once buffers have grown.
func TestDecode_NoAllocs(t *testing.T) {
	payload := kvtest.Encode(1, []any{
		kvtest.Stored([]uint64{1, 2, 3}, uint64(9), tokensOf(48, 0), 16, 4, "GPU", "adapter"),
		kvtest.Removed([]any{[]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}}, "GPU"),
		kvtest.Cleared(),
	}, 1, false)
	var b Batch
	tr := NewTranslator(16)
	run := func() {
		if err := Decode(payload, &b); err != nil {
			t.Fatal(err)
		}
		for i := range b.Events {
			if _, _, err := tr.Event(flash.Worker{ID: 1}, &b.Events[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	run()
	if n := testing.AllocsPerRun(200, run); n != 0 {
		t.Fatalf("%v allocations per batch", n)
	}
}

// BenchmarkDecodeTranslate: one batch of 4 Stored events of 32 blocks
// (block size 16) and one Removed of 32: decoded and turned into flash
// events. Reported per block.
func BenchmarkDecodeTranslate(b *testing.B) {
	var events []any
	for e := 0; e < 4; e++ {
		hashes := make([]uint64, 32)
		for i := range hashes {
			hashes[i] = uint64(e*1000+i) * 0x9E3779B97F4A7C15
		}
		events = append(events, kvtest.Stored(hashes, hashes[0]^1, tokensOf(32*16, uint32(e)), 16, nil, "GPU", nil))
	}
	events = append(events, kvtest.Removed(make([]uint64, 32), "GPU"))
	payload := kvtest.Encode(1, events, 0, false)
	var bt Batch
	tr := NewTranslator(16)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Decode(payload, &bt); err != nil {
			b.Fatal(err)
		}
		for i := range bt.Events {
			if _, _, err := tr.Event(flash.Worker{ID: 1}, &bt.Events[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N)*160/b.Elapsed().Seconds(), "blocks/s")
}

// retained returns the bytes a Batch's buffers hold: for a fresh Batch,
// what Decode allocated into it.
func retained(b *Batch) int {
	n := cap(b.Events) * int(unsafe.Sizeof(RawEvent{}))
	for _, e := range b.Events[:cap(b.Events)] {
		n += 8*cap(e.Hashes) + 4*cap(e.Tokens)
	}
	return n
}

// allocBound is what Decode may allocate for a payload of n bytes.
func allocBound(n int) int { return MaxAllocFactor*n + 256 }

// forgedEvents is a batch that declares n events and holds n zero bytes
// where they should be: 92 00 dd <n> 00×n.
func forgedEvents(n int) []byte {
	p := []byte{0x92, 0x00, 0xdd}
	p = binary.BigEndian.AppendUint32(p, uint32(n))
	return append(p, make([]byte, n)...)
}

// A payload's declared lengths do not size what Decode allocates: 1 MiB
// declaring a million events allocated 176 MB (168 bytes per declared
// event), now at most MaxAllocFactor bytes per payload byte, measured on the
// heap as well as on the batch's buffers.
func TestDecode_AllocationBoundedByPayload(t *testing.T) {
	for _, p := range [][]byte{
		forgedEvents(1 << 20),
		// One Removed event declaring a million hashes, holding 1,000.
		append([]byte{0x92, 0x00, 0x91, 0x92, 0xac, 'B', 'l', 'o', 'c', 'k', 'R', 'e', 'm', 'o', 'v', 'e', 'd', 0xdd, 0x00, 0x0f, 0x42, 0x40}, make([]byte, 1000)...),
	} {
		var b Batch
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		err := Decode(p, &b)
		runtime.ReadMemStats(&m1)
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("a forged payload: %v", err)
		}
		heap, kept := int(m1.TotalAlloc-m0.TotalAlloc), retained(&b)
		t.Logf("%d-byte payload: %d bytes allocated, %d kept in the batch", len(p), heap, kept)
		if bound := allocBound(len(p)); heap > bound || kept > bound {
			t.Fatalf("%d-byte payload: %d bytes allocated, %d kept; bound %d", len(p), heap, kept, bound)
		}
	}
}

// Trim leaves a reused Batch no larger than an ordinary payload needs,
// whatever payloads it decoded before: 64 payloads of ~97 KB left 54 MiB in
// the event slots of a stream's batch.
func TestBatch_TrimReleasesLargePayloads(t *testing.T) {
	var big []any
	for i := 0; i < 600; i++ {
		big = append(big, kvtest.Stored([]uint64{uint64(i) + 1}, nil, tokensOf(16, 0), 16))
	}
	huge := kvtest.Stored(make([]uint64, 5000), nil, tokensOf(16*5000, 0), 16)
	var b Batch
	for _, events := range [][]any{big, {huge}} {
		if err := Decode(kvtest.Encode(1, events, 0, false), &b); err != nil {
			t.Fatal(err)
		}
		before := retained(&b)
		b.Trim()
		if after := retained(&b); after > keepEvents*int(unsafe.Sizeof(RawEvent{}))+keepEvents*(8*keepHashes+4*keepTokens) || after >= before {
			t.Fatalf("%d events: %d bytes kept before Trim, %d after", len(events), before, after)
		}
	}
	// A small payload keeps its buffers: nothing to allocate for the next.
	small := kvtest.Encode(1, []any{kvtest.Stored([]uint64{1, 2}, nil, tokensOf(32, 0), 16)}, 0, false)
	_ = Decode(small, &b)
	b.Trim()
	if n := testing.AllocsPerRun(100, func() { _ = Decode(small, &b); b.Trim() }); n != 0 {
		t.Fatalf("%v allocations per small payload after Trim", n)
	}
}

// Each event's medium names its tier through the tier map, without regard
// to case; no medium is the fastest tier; a medium the map does not name
// is refused with ErrUnknownMedium; and the lookup allocates nothing.
func TestTranslator_Media(t *testing.T) {
	tr := NewTranslator(16)
	tr.SetMedia(MediaFor([]flash.TierSpec{{Name: "GPU"}, {Name: "CPU"}, {Name: "Disk"}}))
	w := flash.Worker{ID: 1}
	var b Batch
	if err := Decode(kvtest.Encode(1, []any{
		kvtest.Stored([]uint64{1}, nil, tokensOf(16, 0), 16, nil, "cpu"),
		kvtest.Stored([]uint64{2}, nil, tokensOf(16, 0), 16),
		kvtest.Removed([]uint64{1}, "DISK"),
		kvtest.Removed([]uint64{1}, "GPU"),
		kvtest.Stored([]uint64{3}, nil, tokensOf(16, 0), 16, nil, "NVMe-oF"),
		kvtest.Removed([]uint64{3}, "tape"),
		kvtest.Cleared(),
	}, 0, false), &b); err != nil {
		t.Fatal(err)
	}
	for i, want := range []flash.Tier{1, 0, 2, 0} {
		ev, ok, err := tr.Event(w, &b.Events[i])
		if err != nil || !ok || ev.Tier != want || ev.TierOnly {
			t.Fatalf("event %d: tier %d (only %v), %v %v; want tier %d", i, ev.Tier, ev.TierOnly, ok, err, want)
		}
	}
	for i := 4; i < 6; i++ {
		if _, ok, err := tr.Event(w, &b.Events[i]); ok || !errors.Is(err, ErrUnknownMedium) {
			t.Fatalf("event %d of an unknown medium: %v %v", i, ok, err)
		}
	}
	if ev, ok, err := tr.Event(w, &b.Events[6]); err != nil || !ok || ev.Kind != flash.KindCleared || ev.TierOnly {
		t.Fatalf("cleared: %+v %v %v", ev, ok, err)
	}
	if a := testing.AllocsPerRun(100, func() { _, _, _ = tr.Event(w, &b.Events[2]) }); a != 0 {
		t.Fatalf("%v allocations a Removed event of a named medium", a)
	}
	// The default map: the GPU alone.
	if _, _, err := NewTranslator(16).Event(w, &b.Events[0]); !errors.Is(err, ErrUnknownMedium) {
		t.Fatalf("a CPU event with the default map: %v", err)
	}
}
