package flash_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every Go snippet in the README is the body of an Example, named in the
// comment above it (<!-- example: DIR FUNC -->), whose output go test
// checks: a snippet copied as written runs and prints what it shows. Only
// its import lines stand outside the function.
func TestReadme_SnippetsAreExamples(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)(<!-- example: (\\S+) (\\w+) -->\\n)?```go\\n(.*?)```")
	found := re.FindAllStringSubmatch(string(readme), -1)
	if len(found) == 0 {
		t.Fatal("no Go snippet in README.md")
	}
	for _, m := range found {
		dir, fn, snippet := m[2], m[3], m[4]
		if m[1] == "" {
			t.Errorf("a Go snippet names no example:\n%s", snippet)
			continue
		}
		body, output := exampleBody(t, filepath.Join("..", dir), fn)
		if output == "" {
			t.Errorf("%s %s: no // Output: comment, so nothing checks that it runs", dir, fn)
		}
		var code []string
		for _, l := range strings.Split(strings.TrimRight(snippet, "\n"), "\n") {
			if strings.HasPrefix(l, "import ") || len(code) == 0 && strings.TrimSpace(l) == "" {
				continue
			}
			code = append(code, l)
		}
		if got := strings.Join(code, "\n"); got != body {
			t.Errorf("README's snippet of %s %s differs from its body:\n--- README\n%s\n--- %s\n%s", dir, fn, got, fn, body)
		}
	}
}

// exampleBody returns the body of function fn among dir's test files, one
// tab of indentation taken off, and its output comment.
func exampleBody(t *testing.T, dir, fn string) (body, output string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != fn {
				continue
			}
			from, to := fset.Position(fd.Body.Lbrace).Offset+1, fset.Position(fd.Body.Rbrace).Offset
			var lines []string
			for _, l := range strings.Split(strings.Trim(string(src[from:to]), "\n"), "\n") {
				lines = append(lines, strings.TrimPrefix(l, "\t"))
			}
			body = strings.Join(lines, "\n")
			if i := strings.Index(body, "// Output:"); i >= 0 {
				output = strings.TrimSpace(body[i+len("// Output:"):])
			}
			return body, output
		}
	}
	t.Fatalf("no function %s in %s", fn, dir)
	return "", ""
}
