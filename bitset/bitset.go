package bitset

import (
	"math/bits"
	"sync/atomic"
)

// Words returns the number of words of a set of n bits.
func Words(n int) int { return (n + 63) >> 6 }

// AtomicSet sets bit i of shared words w.
func AtomicSet(w []uint64, i int) { atomic.OrUint64(&w[i>>6], 1<<(uint(i)&63)) }

// AtomicClear clears bit i of shared words w and reports whether that word is
// now zero (the caller then checks the rest with IsZero to know if the set is
// empty).
func AtomicClear(w []uint64, i int) (wordZero bool) {
	m := uint64(1) << (uint(i) & 63)
	return atomic.AndUint64(&w[i>>6], ^m)&^m == 0
}

// AtomicTest reports whether bit i of shared words w is set.
func AtomicTest(w []uint64, i int) bool {
	return atomic.LoadUint64(&w[i>>6])&(1<<(uint(i)&63)) != 0
}

// IsZero reports whether shared words w hold no bit.
func IsZero(w []uint64) bool {
	for i := range w {
		if atomic.LoadUint64(&w[i]) != 0 {
			return false
		}
	}
	return true
}

// Load copies shared words src into scratch dst.
func Load(dst, src []uint64) {
	n := min(len(dst), len(src))
	for i := 0; i < n; i++ {
		dst[i] = atomic.LoadUint64(&src[i])
	}
}

// AndInto sets scratch dst = a AND shared and returns its popcount.
func AndInto(dst, a, shared []uint64) int {
	n := min(len(dst), len(a), len(shared))
	c := 0
	for i := 0; i < n; i++ {
		v := a[i] & atomic.LoadUint64(&shared[i])
		dst[i] = v
		c += bits.OnesCount64(v)
	}
	return c
}

// IsSubset reports whether a ⊆ shared, stopping at the first word that says
// no.
func IsSubset(a, shared []uint64) bool {
	n := min(len(a), len(shared))
	for i := 0; i < n; i++ {
		if a[i]&^atomic.LoadUint64(&shared[i]) != 0 {
			return false
		}
	}
	return true
}

// AndNotInto sets scratch dst = a AND NOT b (both scratch) and returns its popcount.
func AndNotInto(dst, a, b []uint64) int {
	n := min(len(dst), len(a), len(b))
	c := 0
	for i := 0; i < n; i++ {
		v := a[i] &^ b[i]
		dst[i] = v
		c += bits.OnesCount64(v)
	}
	return c
}

// Count returns the popcount of scratch words a.
func Count(a []uint64) int {
	c := 0
	for _, v := range a {
		c += bits.OnesCount64(v)
	}
	return c
}

// Set sets bit i of scratch words a.
func Set(a []uint64, i int) { a[i>>6] |= 1 << (uint(i) & 63) }

// Clear clears bit i of scratch words a.
func Clear(a []uint64, i int) { a[i>>6] &^= 1 << (uint(i) & 63) }

// Test reports whether bit i of scratch words a is set.
func Test(a []uint64, i int) bool { return a[i>>6]&(1<<(uint(i)&63)) != 0 }

// Next returns the lowest set bit >= i of scratch words a, or -1. Iterate a
// set with: for i := Next(a, 0); i >= 0; i = Next(a, i+1) {…}.
func Next(a []uint64, i int) int {
	if i < 0 {
		i = 0
	}
	wi := i >> 6
	if wi >= len(a) {
		return -1
	}
	if v := a[wi] >> (uint(i) & 63); v != 0 {
		return i + bits.TrailingZeros64(v)
	}
	for wi++; wi < len(a); wi++ {
		if a[wi] != 0 {
			return wi<<6 + bits.TrailingZeros64(a[wi])
		}
	}
	return -1
}
