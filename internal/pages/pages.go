// Package pages makes fresh memory resident ahead of its use.
package pages

import "unsafe"

// size is the smallest page the system maps on a write fault.
const size = 4096

// Touch writes the zero value into one element of every page of s, memory
// just allocated and still zero, so that the system maps its pages now
// rather than when s is first written: the page faults of memory made
// ahead (a capacity hint's) happen when it is made, not on the path that
// fills it. It changes no element's value.
func Touch[T any](s []T) {
	var zero T
	step := max(1, size/int(unsafe.Sizeof(zero)))
	for i := 0; i < len(s); i += step {
		s[i] = zero
	}
}
