// Package shardmap maps (position, key) to a uint64 value: per block
// position, an open-addressed hash table split into shards. The flash index
// maps (position, sequence hash) to an entry's arena Handle.
//
// Contract: Get may be called by any number of goroutines at any time, while
// writers run: it takes no lock, never blocks and allocates nothing. Peek is
// Get without its check against reused tables: a caller of Peek reads Epoch
// before its first Peek and after its last, and MUST discard what it read
// when Epoch moved. Writers
// change a key only between Lock and Unlock of its shard (Locked); writers of
// different shards never wait for each other. A value of 0 means absent:
// Put(0) deletes. A caller must not hold two shard locks at once.
//
// # Design
//
//	Map ── levels (growable array, one per position, copied on growth)
//	         │
//	         ├─ level 0 ── shard 0 ── *table ─ [key|val][key|val][key|val]…
//	         │             shard 1 ── *table
//	         │             …          (shard = top bits of the keyed hash)
//	         ├─ level 1 …
//
// Position first: the hot early positions (system prompts, shared
// preambles) live in small tables that stay in cache. A table interleaves
// keys and values so a hit costs one cache line; it probes linearly from the
// low bits of the keyed hash. Key 0 lives in a field of its own, since 0
// marks an empty slot.
//
// Slot placement uses hash(key) = hi^lo of (key ⊕ k0) × k1 with k0, k1 drawn
// once per process from crypto/rand: local hashes come from user prompts, and
// an attacker who could choose keys colliding in the low bits of an unkeyed
// table could make every probe walk a long cluster.
//
// # Lock-free reads
//
// A writer fills a new slot's value before its key, and never gives a slot
// to another key: deleting keeps the key and zeroes the value (a tombstone),
// and a key that comes back revives its own slot. So a reader that sees a key
// reads that key's value, old or new. Growth and compaction build a new table
// (live entries only) and publish it with one atomic store; a reader still on
// the old table sees a consistent, slightly stale picture. The old table
// (or a dropped one) is kept as a spare of its size, while the spares stay
// within a quarter of the live tables' bytes (past it, the spares of the
// sizes least recently asked for go to the garbage collector). A table is
// made from a spare of its size or of twice it when there is one. A spare
// taken for reuse is cleared and refilled under a reader that may still
// probe it, so the map's Epoch advances before the first write to it: a
// reader that saw Epoch unchanged across its probes read no reused table
// (Get retries; Peek's callers check). A full cache in steady state
// rebuilds tables at the size they have, and moves content between
// positions whose tables grow and shrink through sizes the spares hold: it
// allocates (nearly) nothing.
//
// # Invariants
//
//   - In a table, a slot's key never changes once set while the table is
//     published; used counts set keys (live and tombstones), live the keys
//     with a value, and used ≤ 3/4 of the capacity.
//   - A table is written again after it is replaced only once it is taken as
//     a spare, and then only after Epoch has advanced; on machines that may
//     reorder plain stores, every write to a table is an atomic store.
//   - Tombstones are dropped by the next rebuild, which happens when used
//     would pass 3/4 of the capacity; it keeps the table's size while the
//     live keys are between 1/8 and 5/8 of it, and a table whose live keys
//     fall under 1/16 of its capacity is rebuilt smaller: memory follows
//     live keys, without flipping between two sizes.
//   - Past the first hotPositions positions, a shard's table is dropped
//     (its pointer set to nil) with its last live key, and a level counts
//     its shards with a table. When few deep levels hold one, the trailing
//     empty levels are released: with every shard of each locked, the level
//     is marked dead and a shorter directory published. A writer that finds
//     its level dead after locking a shard looks the level up again; a
//     reader on the old directory sees empty tables. Levels are allocated in
//     groups of 64, so a released group is an allocation the collector can
//     reclaim: memory follows the deepest position held, not the deepest
//     ever.
package shardmap
