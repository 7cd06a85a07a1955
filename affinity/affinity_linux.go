//go:build linux

package affinity

import "golang.org/x/sys/unix"

// Allowed returns the CPUs this process may run on, ascending.
func Allowed() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// Pin binds the calling OS thread to cpu. Call runtime.LockOSThread first.
func Pin(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	return unix.SchedSetaffinity(0, &set)
}

// Supported reports whether Pin can work on this platform.
func Supported() bool { return true }
