//go:build amd64 && gc && !purego && !noasm && !race

package order

// Prefetch asks the CPU to bring the cache line at addr into every cache
// level (PREFETCHT0). It never faults, whatever addr is.
func Prefetch(addr uintptr)

// PrefetchLines is Prefetch of every cache line that bytes addr to
// addr+n-1 lie on, in one call. It never faults.
func PrefetchLines(addr, n uintptr)

// PrefetchAll is Prefetch of each of addrs that is not 0, in one call.
//
//go:noescape
func PrefetchAll(addrs []uintptr)
