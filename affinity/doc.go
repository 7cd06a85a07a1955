// Package affinity pins writer goroutines' OS threads to CPUs and picks which
// CPUs to use.
//
// Contract: Plan may be called from any goroutine. Pin pins the calling OS
// thread: the caller must have called runtime.LockOSThread first and must not
// unlock it while it wants the pinning. Where pinning is impossible (not
// Linux) or not permitted (a container's CPU set, a seccomp policy), Pin
// returns an error and changes nothing; callers treat that as a no-op, since
// pinning is an optimization, never a requirement.
//
// # Design
//
// Plan reads the CPUs this process may run on (sched_getaffinity) and each
// CPU's core from sysfs (topology/core_id and physical_package_id), and
// orders them so that the first choices share no SMT sibling: one CPU per
// physical core first, then the siblings. github.com/klauspost/cpuid/v2
// supplies the threads per core and cache sizes for diagnostics (Describe).
package affinity
