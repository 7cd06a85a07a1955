package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The sweep measures each width it is given, prints a row for each and
// draws its three plots.
func TestWidths_SweepAndPlots(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run([]string{"--workers", "16,300", "--rounds", "1", "--requests", "400", "--out", dir}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(strings.TrimSpace(lines[1]), "16 ") || !strings.HasPrefix(strings.TrimSpace(lines[2]), "300 ") {
		t.Fatalf("output:\n%s", out.String())
	}
	for _, name := range []string{"widths_memory", "widths_store", "widths_query"} {
		for _, ext := range []string{".png", ".svg"} {
			if fi, err := os.Stat(filepath.Join(dir, name+ext)); err != nil || fi.Size() == 0 {
				t.Errorf("%s%s: %v", name, ext, err)
			}
		}
	}
}

// A width that is not a positive number is refused.
func TestWidths_RejectsBadWidth(t *testing.T) {
	var out bytes.Buffer
	for _, w := range []string{"bad", "0", "16,-1"} {
		if err := run([]string{"--workers", w, "--no-plots"}, &out); err == nil {
			t.Fatalf("--workers %s was taken", w)
		}
	}
}
