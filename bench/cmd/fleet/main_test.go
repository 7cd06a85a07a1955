package main

import (
	"bytes"
	"strings"
	"testing"
)

// A small fleet: the report names its pairs and both kinds of query, and
// every query matched.
func TestFleet_Small(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"--workers", "40", "--blocks", "512", "--prompt", "128", "--shared", "16", "--systems", "4", "--queries", "200"}, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"40 workers × 512 blocks", "20480 (block, worker) pairs", "query (stored prompt", "query (system prompt, then unknown"} {
		if !strings.Contains(s, want) {
			t.Fatalf("no %q in:\n%s", want, s)
		}
	}
	if strings.Contains(s, " 0 workers matched") {
		t.Fatalf("a kind of query matched nobody:\n%s", s)
	}
}

func TestFleet_BadSizes(t *testing.T) {
	if err := run([]string{"--prompt", "10", "--shared", "10"}, &bytes.Buffer{}); err == nil {
		t.Fatal("a system prompt as long as the prompt was taken")
	}
}
