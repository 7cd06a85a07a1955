package asm

// subsetGeneric is the pure-Go twin of the subset kernels.
func subsetGeneric(a, b []uint64) bool {
	b = b[:len(a)]
	for i := range a {
		if a[i]&^b[i] != 0 {
			return false
		}
	}
	return true
}
