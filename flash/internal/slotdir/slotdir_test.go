package slotdir

import "testing"

// Slots are given out densely and taken back; each change of hands moves
// the epoch by 2 and leaves it even; Owned reports a worker only if it
// took its slot before the given epoch and still holds it.
func TestTable_TakeGiveOwned(t *testing.T) {
	tb := New(2, 1)
	e0 := tb.Epoch()
	a, ok := tb.Take(7, 1)
	if !ok || a != 0 || tb.Used() != 1 {
		t.Fatalf("first Take: slot %d %v, used %d", a, ok, tb.Used())
	}
	e1 := tb.Epoch()
	if e1 != e0+2 || e1&1 != 0 {
		t.Fatalf("epoch %d after one Take from %d", e1, e0)
	}
	b, _ := tb.Take(8, 0)
	if _, ok := tb.Take(9, 0); ok {
		t.Fatal("a third worker got a slot of two")
	}
	tb.SetBlocks(a, 5)
	in := &tb.Infos()[a]
	if !in.Live() || in.ID() != 7 || in.Rank() != 1 || in.Blocks() != 5 || tb.Blocks(a) != 5 {
		t.Fatalf("slot %d: live %v id %d rank %d blocks %d", a, in.Live(), in.ID(), in.Rank(), in.Blocks())
	}
	// A search that began before b was taken must not report b's worker.
	if _, _, _, ok := tb.Owned(b, e1); ok {
		t.Fatal("Owned reports a worker that took its slot after the search began")
	}
	if id, rank, blocks, ok := tb.Owned(a, tb.Epoch()); !ok || id != 7 || rank != 1 || blocks != 5 {
		t.Fatalf("Owned(a) = %d %d %d %v", id, rank, blocks, ok)
	}
	tb.Give(a)
	if tb.Infos()[a].Live() || tb.Blocks(a) != 0 || tb.Used() != 1 {
		t.Fatal("a given-back slot still reads live")
	}
	if _, _, _, ok := tb.Owned(a, tb.Epoch()); ok {
		t.Fatal("Owned reports a free slot")
	}
	if c, ok := tb.Take(10, 0); !ok || c != a {
		t.Fatalf("the freed slot is not reused: %d %v", c, ok)
	}
	if tb.Epoch()&1 != 0 {
		t.Fatal("epoch odd at rest")
	}
}

// Words covers every slot given out, at least one word, and falls when the
// highest ones are given back.
func TestTable_Words(t *testing.T) {
	tb := New(300, 1)
	if tb.Words() != 1 {
		t.Fatalf("empty: %d words", tb.Words())
	}
	want := func(n int) {
		t.Helper()
		if tb.Words() != n {
			t.Fatalf("%d slots used (top %d): %d words, want %d", tb.Used(), tb.free.Top(), tb.Words(), n)
		}
	}
	for i := range 64 {
		tb.Take(uint64(i), 0)
	}
	want(1)
	tb.Take(64, 0) // slot 64
	want(2)
	for i := 65; i < 200; i++ {
		tb.Take(uint64(i), 0)
	}
	want(4) // slots 0-199
	tb.Give(199)
	want(4) // 198 still taken
	for s := 128; s < 199; s++ {
		tb.Give(s)
	}
	want(2)
	tb.Give(3)
	want(2)
	if s, _ := tb.Take(500, 0); s != 3 {
		t.Fatalf("Take gave slot %d, want the lowest free, 3", s)
	}
	for s := 0; s < 128; s++ {
		tb.Give(s)
	}
	want(1)
}

// With a stride, a slot's places are given out and taken back together,
// each describing the slot's worker, and Words covers the places.
func TestTable_Stride(t *testing.T) {
	tb := New(40, 3)
	if tb.Len() != 40 || tb.Stride() != 3 || len(tb.Infos()) != 120 {
		t.Fatalf("len %d stride %d places %d", tb.Len(), tb.Stride(), len(tb.Infos()))
	}
	for i := range 22 {
		if s, ok := tb.Take(uint64(100+i), 7); !ok || s != i {
			t.Fatalf("take %d: slot %d %v", i, s, ok)
		}
	}
	if tb.Words() != 2 { // places 0-65
		t.Fatalf("22 slots of 3 places: %d words, want 2", tb.Words())
	}
	tb.SetBlocks(21, 9)
	e := tb.Epoch() + 1
	for p := 63; p < 66; p++ {
		if id, rank, blocks, ok := tb.Owned(p, e); !ok || id != 121 || rank != 7 || blocks != 9 {
			t.Fatalf("place %d: %d %d %d %v", p, id, rank, blocks, ok)
		}
	}
	if tb.Blocks(21) != 9 || tb.Blocks(20) != 0 {
		t.Fatalf("blocks %d %d", tb.Blocks(21), tb.Blocks(20))
	}
	tb.Give(21)
	for p := 63; p < 66; p++ {
		if tb.Infos()[p].Live() {
			t.Fatalf("place %d live after Give", p)
		}
	}
	if tb.Words() != 1 || tb.Used() != 21 {
		t.Fatalf("after Give: %d words, %d used", tb.Words(), tb.Used())
	}
}
