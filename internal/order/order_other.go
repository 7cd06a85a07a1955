//go:build !(amd64 && gc && !purego && !noasm && !race)

package order

// Prefetch asks the CPU to bring the cache line at addr into every cache
// level; builds without assembly (and race builds) have no prefetch
// instruction, so it does nothing.
func Prefetch(addr uintptr) {}

// PrefetchLines is Prefetch of every cache line that bytes addr to
// addr+n-1 lie on: nothing, in builds without assembly.
func PrefetchLines(addr, n uintptr) {}

// PrefetchAll is Prefetch of each of addrs: nothing, in builds without
// assembly.
func PrefetchAll(addrs []uintptr) {}
