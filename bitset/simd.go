package bitset

import (
	"github.com/flashindexer/flashindexer/asm"
)

// useSIMD reports whether a set of n words goes to the asm kernels (never
// in a race build, which has none: the atomic loops below answer the
// same).
func useSIMD(n int) bool { return asm.UseKernel(n) }
