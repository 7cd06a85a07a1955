// Package allocs counts what a function allocates, for tests that hold
// the index's paths to zero allocations.
package allocs

import (
	"runtime/debug"
	"testing"
)

// runs is how many runs Of measures.
const runs = 3

// Of returns the most heap allocations of one run of f over three runs,
// after a warm-up run (testing.AllocsPerRun with one run each: an average
// over several would round a few allocations down to none). A path that
// allocates in one run of three shows: Of reports every allocation it
// sees. The count is the process's, so the collector is off while Of
// measures: its workers' own allocations (which a slow machine, or qemu,
// shows now and then) are not f's.
func Of(f func()) float64 {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	n := 0.0
	for range runs {
		n = max(n, testing.AllocsPerRun(1, f))
	}
	return n
}
