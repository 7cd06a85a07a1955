//go:build !(amd64 && gc && !purego && !noasm)

package asm

import "sync/atomic"

var hasAVX512, hasAVX2 = false, false

// detected: a build without assembly uses no CPU feature.
func detected() []string { return nil }

func init() { selectBest() }

func kernelFor(p Path) (func(a, b []uint64) bool, bool) {
	return subsetGeneric, p == PathGeneric
}

// Prefetch asks the CPU to bring the cache line at addr into every cache
// level; builds without assembly have no prefetch instruction, so it does
// nothing.
func Prefetch(addr uintptr) {}

// StoreRelease writes v to *p as a release store: a reader that loads v
// from *p with sync/atomic then sees every store the caller made before
// it. Builds without assembly use atomic.StoreUint64.
func StoreRelease(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
