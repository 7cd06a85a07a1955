// Package shardmap maps (position, key) to a uint64 value: per position, an
// open-addressed hash table split into shards. The flash index maps
// (position, sequence hash) to the set of workers that hold that content:
// the value is the set itself, one bit a worker (a table for each plane of
// 64 workers), or, in the form for wider sets, the set as a word of low
// slots, a short list of slot numbers or a tagged arena handle.
//
// A value of 0 means absent: writing 0 deletes the key.
//
// # Readers
//
// Get may be called by any number of goroutines at any time, while writers
// run: it takes no lock, never blocks and allocates nothing. Peek is Get
// without its check against reused tables: a caller of Peek reads Epoch
// before its first Peek and after its last, and MUST discard what it read
// when Epoch moved. Range walks every key, for tests and tools.
//
// # Writers
//
// A map has writers of one kind:
//
//   - Shared writers: Put, Or and Delete, and the Writers of Map.Writer.
//     Each write locks its key's shard (of 2^b per position,
//     WithShardBits), so writers of different shards never wait for each
//     other.
//   - A sole writer: the Writer of Map.SoleWriter, when one goroutine
//     alone writes the map (the caller guarantees it; readers may run). It
//     takes no lock: one probe finds a key's slot or the empty slot a new
//     key goes in, and an insert into a table with room is two stores.
//
// A Writer is what a write path uses: keys named with their slot hash once
// (Writer.Key), Or with an unless mask, GetOrPut, Update of a value under
// its shard, OrRun over the keys of consecutive positions in one call (and
// OrRunHeld, which hands a sole writer the value where the run stopped), and
// prefetches of the tables and buckets it is about to write.
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
// Slot placement uses a keyed hash (internal/keyhash): the 128-bit product
// of key ⊕ k0 and the key with its halves swapped ⊕ k1, its halves XORed
// and the upper 32 bits folded into the lower; k0 and k1 (odd) are drawn
// once per process from crypto/rand. The low bits pick the bucket, the top
// three the shard. Keys come from user prompts, and an attacker who could
// choose keys colliding in the low bits of an unkeyed table could make
// every probe walk a long cluster.
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
//     with a value, and used ≤ 3/4 of the capacity (7/8 in a map made
//     WithDenseTables).
//   - A table is written again after it is replaced only once it is taken as
//     a spare, and then only after Epoch has advanced; on machines that may
//     reorder plain stores, every write to a table is an atomic store.
//   - Tombstones are dropped by the next rebuild, which happens when used
//     would pass that; it keeps the table's size while the
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
