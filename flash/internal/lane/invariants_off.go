//go:build !flash_invariants

package lane

// checkTables verifies the shared tables against the workers' nodes in
// flash_invariants builds.
func (s *Set) checkTables() {}
