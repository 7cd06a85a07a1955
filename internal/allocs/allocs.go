// Package allocs counts what a function allocates, for tests that hold
// the index's paths to zero allocations.
package allocs

import "testing"

// tries bounds the measurements Of makes.
const tries = 3

// Of returns the heap allocations of one run of f, after a warm-up run
// (testing.AllocsPerRun with one run: an average over several would round
// a few allocations down to none). The count is the process's, and the
// runtime allocates on its own now and then (a goroutine it starts for a
// collection, say), so a nonzero count is measured again, up to three
// times, and the least is returned: what f allocates itself shows every
// time.
func Of(f func()) float64 {
	n := testing.AllocsPerRun(1, f)
	for i := 1; i < tries && n != 0; i++ {
		n = min(n, testing.AllocsPerRun(1, f))
	}
	return n
}
