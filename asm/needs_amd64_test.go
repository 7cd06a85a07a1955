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
	found := generatedNeeds(t)
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

// generatedNeeds returns each kernel's name and its extensions, as the
// generator lists them in kernels_amd64.s.
func generatedNeeds(t *testing.T) [][]string {
	src, err := os.ReadFile("kernels_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^// func (\w+)\(.*\n// Requires: (.*)$`)
	return re.FindAllStringSubmatch(string(src), -1)
}

// The selection picks the widest kernel whose every extension, as the
// generator lists it, the kernel (Linux's /proc/cpuinfo) reports this CPU
// has: a source apart from the cpuid library dispatch reads, so a kernel
// picked on a CPU that lacks one of its extensions shows here.
func TestKernels_SelectionFollowsCPUInfo(t *testing.T) {
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip("no /proc/cpuinfo here")
	}
	flags := map[string]bool{}
	for _, line := range strings.Split(string(info), "\n") {
		if name, list, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "flags" {
			for _, f := range strings.Fields(list) {
				flags[f] = true
			}
			break
		}
	}
	has := map[string]bool{}
	for _, m := range generatedNeeds(t) {
		ok := true
		for _, r := range strings.Split(m[2], ", ") {
			ok = ok && flags[strings.ToLower(r)]
		}
		has[m[1]] = ok
	}
	want := PathGeneric
	switch {
	case has["subsetAVX512"]:
		want = PathAVX512
	case has["subsetAVX2"]:
		want = PathAVX2
	}
	defer selectBest()
	_ = SetPath(PathGeneric)
	selectBest()
	if got := Active(); got != want {
		t.Fatalf("selection picks %v; /proc/cpuinfo and the kernels' requirements say %v", got, want)
	}
}
