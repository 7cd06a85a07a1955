package flash

import (
	"runtime"

	"github.com/flashindexer/flashindexer/affinity"
	"github.com/flashindexer/flashindexer/asm"
	"github.com/flashindexer/flashindexer/internal/order"
)

// Features is what the index found on this machine and what it chose.
type Features struct {
	Machine  string   // the CPU's brand, cores and caches, and the CPUs this process may use
	Detected []string // the CPU features the kernels can use that it has (avx2, avx512f, avx512bw, bmi2)
	// Kernel is the subset kernel family the search uses for wide worker
	// sets (avx512, avx2 or generic), from KernelFromWorkers (MaxWorkers).
	Kernel            string
	KernelFromWorkers int
	// Pinning reports whether writer goroutines can be pinned to CPUs
	// here; WriterCPUs is where New's default writers would go.
	Pinning    bool
	WriterCPUs []int
	// GOMAXPROCS and Race: the Go runtime's settings that change the
	// index's speed (race builds use atomic loops, not the kernels).
	GOMAXPROCS int
	Race       bool
}

// DetectFeatures reports the machine, the CPU features found, the kernels
// chosen and where writers would be pinned. It is for logs and tuning
// (docs/PROFILING.md), not for hot paths.
func DetectFeatures() Features {
	return Features{
		Machine:           affinity.Describe(),
		Detected:          asm.Detected(),
		Kernel:            asm.Active().String(),
		KernelFromWorkers: asm.Crossover * 64,
		Pinning:           affinity.Supported(),
		WriterCPUs:        affinity.Plan(DefaultWriters()),
		GOMAXPROCS:        runtime.GOMAXPROCS(0),
		Race:              order.Race,
	}
}
