// Package arena stores SeqEntry slots in pointer-free slabs of uint64 words,
// addressed by uint32 refs, with per-writer allocation and safe reuse of freed
// slots while readers run.
//
// Contract: Slot, Valid and the atomic accessors may be called by any number
// of goroutines at any time. An Allocator belongs to one goroutine (a writer);
// different writers allocate and free concurrently without contending.
// Writing a live slot's fields (the bits through bitset's Atomic*
// functions) is the caller's business to serialize: the flash index does it
// under the shardmap shard lock of the slot's key. Nothing allocates on the
// hot path: Alloc and Free allocate only when a free list grows or a new part
// is reserved.
//
// # Design
//
// A slot is a fixed stride of words:
//
//	word 0   version   even: live, odd: free or being initialized
//	word 1   seq       the sequence hash of the entry
//	word 2…  bits      the worker set, Words(MaxWorkers) words
//
// Slabs grow geometrically (slab k holds 1024·2^k slots), so a ref maps to
// (slab, offset) with one leading-zero count. Each slab is reserved in eight
// equal parts, a part when its first slot is handed out, so what is reserved
// and unused stays under an eighth of what is used (whole doubling slabs
// would reserve up to twice it). The part directory is a fixed array of
// 23·8 atomic pointers that never moves. Existing slots never move.
// Slabs are []uint64: the garbage collector never scans them, so the GC cost
// of the index does not grow with its size.
//
// # Safe reuse: versions, not epochs
//
// Readers learn a slot through a Handle (ref and version). A reader loads the
// slot's version, checks it equals the handle's, reads the fields it needs,
// and loads the version again: if it changed, the slot was freed (and perhaps
// reused) meanwhile and the reader retries from the table. Freeing bumps the
// version to odd; Alloc initializes the slot while odd and publishes it by
// bumping to even. The odd version must be visible before any of the new
// words: x86-64 keeps a core's stores in order, so plain stores do; on
// weakly ordered architectures (arm64) a plain store may pass the earlier
// release store, so there the reused slot's words are stored atomically. So a freed slot can be reused at once, with no grace
// period and no reader registration: epoch-based reclamation would cost every
// query an atomic write to a shared epoch counter and let one slow reader pin
// every freed slot, while versions cost a reader two plain loads per probe.
//
// # Invariants
//
//   - A slot's version only grows; a live slot's version is even.
//   - A Handle names exactly one life of a slot: its version is the slot's
//     (low 32 bits) while that life lasts, never again after.
//   - A slot is on at most one free list, and only while its version is odd.
package arena
