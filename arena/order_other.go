//go:build !amd64

package arena

// storesInOrder: arm64 and the other weakly ordered architectures may make
// a plain store visible before an earlier release store (a release orders
// only what comes before it), so a reused slot's words are written with
// sync/atomic stores, which stay in program order.
const storesInOrder = false
