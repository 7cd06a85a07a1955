package arena

// storesInOrder: x86-64 makes a core's stores visible in program order
// (TSO), so a reused slot's plain stores cannot pass the store that made its
// version odd.
const storesInOrder = true
