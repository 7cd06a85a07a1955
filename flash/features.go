package flash

import (
	"runtime"

	"github.com/flashindexer/flashindexer/affinity"
	"github.com/flashindexer/flashindexer/internal/order"
)

// Features is what the index found on this machine and what it chose.
type Features struct {
	Machine string // the CPU's brand, cores and caches, and the CPUs this process may use
	// Pinning reports whether writer goroutines can be pinned to CPUs
	// here; WriterCPUs is where New's default writers would go.
	Pinning    bool
	WriterCPUs []int
	// GOMAXPROCS and Race: the Go runtime's settings that change the
	// index's speed (race builds have no assembly).
	GOMAXPROCS int
	Race       bool
}

// DetectFeatures reports the machine and where writers would be pinned. It
// is for logs and tuning (docs/PROFILING.md), not for hot paths.
func DetectFeatures() Features {
	return Features{
		Machine:    affinity.Describe(),
		Pinning:    affinity.Supported(),
		WriterCPUs: affinity.Plan(DefaultWriters()),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Race:       order.Race,
	}
}
