//go:build amd64 && gc && !purego && !noasm && !race

package asm

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/klauspost/cpuid/v2"
)

// Every extension a kernel's instructions need, as the generator lists it
// above each routine ("// Requires: ..."), is one dispatch checks for that
// kernel: a CPU that reports AVX512BW without AVX512DQ once ran KORTESTB
// and died with an illegal instruction.
func TestKernels_NeedsCoverGenerated(t *testing.T) {
	src, err := os.ReadFile("kernels_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^// func (\w+)\(.*\n// Requires: (.*)$`)
	found := re.FindAllStringSubmatch(string(src), -1)
	if len(found) != len(needs) {
		t.Fatalf("%d kernels with their requirements in kernels_amd64.s, %d in needs", len(found), len(needs))
	}
	for _, m := range found {
		name, reqs := m[1], strings.Split(m[2], ", ")
		have, ok := needs[name]
		if !ok {
			t.Fatalf("kernel %s: not in needs", name)
		}
		for _, r := range reqs {
			f := cpuid.ParseFeature(r)
			if f == cpuid.UNKNOWN {
				t.Fatalf("kernel %s: extension %q unknown to cpuid", name, r)
			}
			covered := false
			for _, h := range have {
				covered = covered || h == f
			}
			if !covered {
				t.Errorf("kernel %s uses %s, which dispatch does not check (it checks %v)", name, r, have)
			}
		}
	}
}
