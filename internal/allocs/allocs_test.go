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
