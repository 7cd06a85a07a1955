package worker

import (
	"testing"
	"unsafe"
)

// The layouts a worker's memory rests on.
func TestLayout(t *testing.T) {
	for _, c := range []struct {
		name       string
		size, want uintptr
		why        string
	}{
		// One per (block, worker), the largest share of the index's
		// memory; the links that re-attachment walks are apart (12 more
		// bytes per node would be a sixth of the index at 16 workers).
		{"node", unsafe.Sizeof(node{}), 32, "one per (block, worker)"},
		{"nodeLinks", unsafe.Sizeof(nodeLinks{}), 12, "complex workers only"},
		// A bucket of the engine-id map is one cache line: a new id costs
		// one line.
		{"idBucket", unsafe.Sizeof(idBucket{}), 64, "one cache line"},
	} {
		if c.size != c.want {
			t.Errorf("%s is %d bytes, want %d (%s)", c.name, c.size, c.want, c.why)
		}
	}
	if off := unsafe.Offsetof(idBucket{}.vals); off != 16 {
		t.Errorf("idBucket's values at %d, want 16 (after 12 tags, the count, padding)", off)
	}
}
