package order

// StoresInOrder reports whether a core's stores become visible in program
// order: x86-64 (TSO) does, so plain stores cannot pass an earlier release
// store.
const StoresInOrder = true
