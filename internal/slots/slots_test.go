package slots

import "testing"

// Slots are given out densely and taken back; each change of hands moves
// the epoch by 2 and leaves it even; Owned reports a worker only if it
// took its slot before the given epoch and still holds it.
func TestTable_TakeGiveOwned(t *testing.T) {
	tb := New(2)
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
