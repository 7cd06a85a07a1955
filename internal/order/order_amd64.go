//go:build amd64 && gc && !purego && !noasm

package order

// Prefetch asks the CPU to bring the cache line at addr into every cache
// level (PREFETCHT0). It never faults, whatever addr is.
func Prefetch(addr uintptr)

// PrefetchAll is Prefetch of each of addrs, in one call: a loop that
// gathers the addresses then makes no call, which would cost it its
// registers (Go's calls keep none).
//
//go:noescape
func PrefetchAll(addrs []uintptr)

// StoreRelease writes v to *p as a release store: one plain MOVQ on amd64
// (see the package comment). The race detector does not see it: race
// builds publish with sync/atomic (Publish).
//
//go:noescape
func StoreRelease(p *uint64, v uint64)
