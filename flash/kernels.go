package flash

// Kernels describes the bitset kernels in use, for logs and the bench.
func Kernels() string { return "generic (math/bits popcount)" }
