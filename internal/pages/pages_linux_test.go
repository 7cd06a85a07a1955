package pages_test

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/flashindexer/flashindexer/internal/pages"
)

// resident counts the pages of b the system has mapped (mincore).
func resident(t *testing.T, b []byte) (in, all int) {
	// mincore wants a page-aligned start: the pages b lies on.
	start := uintptr(unsafe.Pointer(&b[0])) &^ (4096 - 1)
	end := uintptr(unsafe.Pointer(&b[0])) + uintptr(len(b))
	vec := make([]byte, (end-start+4095)/4096)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, start, end-start, uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Skipf("mincore: %v", e)
	}
	for _, v := range vec {
		in += int(v & 1)
	}
	return in, len(vec)
}

// Touch maps every page of fresh memory: a large allocation the runtime
// takes from the system is not mapped until written, and is after Touch.
func TestTouch_MapsEveryPage(t *testing.T) {
	const size = 64 << 20
	fresh := make([]byte, size)
	before, all := resident(t, fresh)
	if before == all {
		t.Skip("a fresh allocation is mapped already: the runtime reused written memory")
	}
	pages.Touch(fresh)
	if in, all := resident(t, fresh); in != all {
		t.Fatalf("%d of %d pages mapped after Touch (%d before)", in, all, before)
	}
}
