//go:build amd64 && gc && !purego && !noasm

package asm

// Generated in kernels_amd64.s by asm/_gen.

// subsetAVX512 reports whether a AND NOT b is zero over len(a) words.
// Go equivalent: subsetGeneric(a, b). Needs AVX512F, AVX512BW and BMI2.
//
//go:noescape
func subsetAVX512(a, b []uint64) bool

// subsetAVX2 reports whether a AND NOT b is zero over len(a) words.
// Go equivalent: subsetGeneric(a, b). Needs AVX2.
//
//go:noescape
func subsetAVX2(a, b []uint64) bool

// Prefetch asks the CPU to bring the cache line at addr into every cache
// level (PREFETCHT0). It never faults, whatever addr is, and changes nothing
// a program can observe but timing. Writers call it for the lines a batch
// will read, so that the batch's cache misses overlap instead of queueing.
func Prefetch(addr uintptr)

// StoreRelease writes v to *p as a release store: a reader that loads v
// from *p with sync/atomic then sees every store the caller made before
// it. On amd64 it is one plain MOVQ (stores become visible in program
// order, and the compiler moves no store across the call), where
// atomic.StoreUint64 is a locked exchange that first waits for every
// earlier store to leave the store buffer. The race detector does not see
// it: race builds publish with sync/atomic instead.
//
//go:noescape
func StoreRelease(p *uint64, v uint64)
