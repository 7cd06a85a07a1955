package flash

import "github.com/flashindexer/flashindexer/asm"

// Kernels describes the worker-set kernels in use, for logs and the bench.
func Kernels() string { return asm.Kernels() }
