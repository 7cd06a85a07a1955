//go:build !flash_invariants

package flash

// invariants is false unless built with -tags flash_invariants.
const invariants = false

func (ln *lane) checkWorker(*workerState) {}
