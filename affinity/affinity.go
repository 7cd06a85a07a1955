package affinity

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/klauspost/cpuid/v2"
)

// core identifies a physical core.
type core struct{ pkg, id int }

// readInt reads a small integer from a sysfs file, or -1.
func readInt(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return v
}

func coreOf(cpu int) core {
	base := fmt.Sprintf("/sys/devices/system/cpu/cpu%d/topology/", cpu)
	c := core{pkg: readInt(base + "physical_package_id"), id: readInt(base + "core_id")}
	if c.id < 0 { // unknown topology: every CPU its own core
		c = core{pkg: -1, id: cpu}
	}
	return c
}

// order puts one CPU per core first, then the remaining siblings, keeping the
// given order within each round.
func order(cpus []int, coreOf func(int) core) []int {
	seen := map[core]int{}
	rounds := [][]int{}
	for _, c := range cpus {
		k := coreOf(c)
		r := seen[k]
		seen[k]++
		for len(rounds) <= r {
			rounds = append(rounds, nil)
		}
		rounds[r] = append(rounds[r], c)
	}
	var out []int
	for _, r := range rounds {
		out = append(out, r...)
	}
	return out
}

// Plan returns n CPUs for n writers, spread over physical cores first. With
// fewer CPUs than writers, CPUs repeat. It returns nil when the allowed CPUs
// cannot be read; callers then run unpinned.
func Plan(n int) []int {
	cpus := Allowed()
	if len(cpus) == 0 || n <= 0 {
		return nil
	}
	ordered := order(cpus, coreOf)
	out := make([]int, n)
	for i := range out {
		out[i] = ordered[i%len(ordered)]
	}
	return out
}

// Describe returns a one-line summary of the CPU for logs and the bench.
func Describe() string {
	c := cpuid.CPU
	return fmt.Sprintf("%s, %d logical / %d physical cores, %d threads per core, L1d %d KiB, L2 %d KiB, L3 %d KiB, %d CPUs allowed",
		c.BrandName, c.LogicalCores, c.PhysicalCores, c.ThreadsPerCore,
		c.Cache.L1D>>10, c.Cache.L2>>10, c.Cache.L3>>10, len(Allowed()))
}
