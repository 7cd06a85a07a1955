package allocs_test

import (
	"testing"

	"github.com/flashindexer/flashindexer/internal/allocs"
)

var sink []byte

func TestOf(t *testing.T) {
	if n := allocs.Of(func() {}); n != 0 {
		t.Fatalf("an empty function: %v allocations", n)
	}
	if n := allocs.Of(func() {
		for range 5 {
			sink = make([]byte, 64)
		}
	}); n != 5 {
		t.Fatalf("five allocations counted as %v", n)
	}
}

// A function that allocates in one run of three is not counted as
// allocating nothing.
func TestOf_SeesOccasionalAllocations(t *testing.T) {
	calls := 0
	if n := allocs.Of(func() {
		if calls++; calls%3 == 0 {
			sink = make([]byte, 64)
		}
	}); n != 1 {
		t.Fatalf("one allocation in three runs counted as %v", n)
	}
}
