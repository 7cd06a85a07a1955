package search

import (
	"bytes"
	"os"
	"testing"

	"github.com/flashindexer/flashindexer/flash/internal/specialize"
)

// search_gen.go is package jump's search specialized to the finder, and
// nothing else: regenerated from jump/jump.go it comes out the same.
func TestSearchGen_Current(t *testing.T) {
	src, err := os.ReadFile("../../../jump/jump.go")
	if err != nil {
		t.Fatal(err)
	}
	want, err := specialize.Specialize(src, "search", "*Finder", "jump")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("search_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("flash/internal/search/search_gen.go is not jump/jump.go's search specialized: run\n" +
			"go run ./flash/internal/specialize/specialize-jump -in jump/jump.go -out flash/internal/search/search_gen.go -pkg search -type '*Finder' -prefix jump")
	}
}
