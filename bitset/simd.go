package bitset

import (
	"github.com/flashindexer/flashindexer/asm"
	"github.com/flashindexer/flashindexer/internal/order"
)

// useSIMD reports whether a set of n words goes to the asm kernels. Under
// the race detector it never does: shared words are written atomically by
// writers, and the kernels' plain vector loads would be reported; the
// atomic loops below answer the same.
func useSIMD(n int) bool { return !order.Race && asm.UseKernel(n) }
