//go:build !amd64

package order

// StoresInOrder: arm64 and the other weakly ordered architectures may make
// a plain store visible before an earlier release store (a release orders
// only what comes before it); a writer that needs the order uses atomic
// stores, which stay in program order.
const StoresInOrder = false
