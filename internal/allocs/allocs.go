// Package allocs counts what a function allocates, for tests that hold
// the index's paths to zero allocations.
package allocs

import "testing"

// runs is how many runs Of measures.
const runs = 3

// Of returns the most heap allocations of one run of f over three runs,
// after a warm-up run (testing.AllocsPerRun with one run each: an average
// over several would round a few allocations down to none). A path that
// allocates in one run of three shows: Of reports every allocation it
// sees.
func Of(f func()) float64 {
	n := 0.0
	for range runs {
		n = max(n, testing.AllocsPerRun(1, f))
	}
	return n
}
