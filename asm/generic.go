package asm

import "math/bits"

// andPopcntGeneric is the pure-Go twin of the and-popcount kernels.
func andPopcntGeneric(a, b []uint64) int {
	b = b[:len(a)]
	c := 0
	for i := range a {
		c += bits.OnesCount64(a[i] & b[i])
	}
	return c
}

// subsetGeneric is the pure-Go twin of the subset kernels.
func subsetGeneric(a, b []uint64) bool {
	b = b[:len(a)]
	for i := range a {
		if a[i]&^b[i] != 0 {
			return false
		}
	}
	return true
}
