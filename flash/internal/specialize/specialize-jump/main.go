// Command cmd writes a specialized copy of package jump's search:
//
//	go run ./flash/internal/specialize/specialize-jump -in jump/jump.go -out flash/internal/search/search_gen.go -pkg search -type '*Finder' -prefix jump
package main

import (
	"flag"
	"log"
	"os"

	"github.com/flashindexer/flashindexer/flash/internal/specialize"
)

func main() {
	in := flag.String("in", "jump/jump.go", "the generic search")
	out := flag.String("out", "", "the file to write")
	pkg := flag.String("pkg", "", "its package")
	typ := flag.String("type", "", "the prober type (a name, or * and a name)")
	prefix := flag.String("prefix", "jump", "prefix of the copy's names")
	flag.Parse()
	src, err := os.ReadFile(*in)
	if err != nil {
		log.Fatal(err)
	}
	code, err := specialize.Specialize(src, *pkg, *typ, *prefix)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, code, 0o644); err != nil {
		log.Fatal(err)
	}
}
