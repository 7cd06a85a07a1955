//go:build !(amd64 && gc && !purego && !noasm)

package order

import "sync/atomic"

// Prefetch asks the CPU to bring the cache line at addr into every cache
// level; builds without assembly have no prefetch instruction, so it does
// nothing.
func Prefetch(addr uintptr) {}

// PrefetchLines is Prefetch of every cache line that bytes addr to
// addr+n-1 lie on: nothing, in builds without assembly.
func PrefetchLines(addr, n uintptr) {}

// StoreRelease writes v to *p as a release store: atomic.StoreUint64 in
// builds without assembly.
func StoreRelease(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
