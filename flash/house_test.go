package flash

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// flash is the API and its wiring: its files other than tests stay within
// 1,350 lines (tiers' API took it past 1,200), the engine under
// flash/internal.
func TestHouse_FlashStaysSmall(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += strings.Count(string(b), "\n")
	}
	if lines > 1350 {
		t.Fatalf("package flash has %d lines outside its tests, past 1,350: what is not API or wiring belongs in flash/internal", lines)
	}
}
