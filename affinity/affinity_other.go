//go:build !linux

package affinity

import "errors"

// Allowed returns nil: the allowed CPU set is not read on this platform.
func Allowed() []int { return nil }

// Pin is not supported on this platform; it returns an error and does nothing.
func Pin(cpu int) error { return errors.New("affinity: pinning not supported on this platform") }

// Supported reports whether Pin can work on this platform.
func Supported() bool { return false }
