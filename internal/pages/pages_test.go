package pages_test

import (
	"testing"

	"github.com/flashindexer/flashindexer/internal/pages"
)

type wide [4]uint64

// Touch leaves every element as it was, whatever the element's size, and
// empty slices alone.
func TestTouch_ChangesNothing(t *testing.T) {
	s := make([]wide, 1000)
	pages.Touch(s)
	for i := range s {
		if s[i] != (wide{}) {
			t.Fatalf("element %d is %v", i, s[i])
		}
	}
	b := make([]byte, 3*4096+5)
	pages.Touch(b)
	for i := range b {
		if b[i] != 0 {
			t.Fatalf("byte %d is %d", i, b[i])
		}
	}
	pages.Touch([]uint64(nil))
	pages.Touch(make([][4096]byte, 2))
}
