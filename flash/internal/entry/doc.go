// Package entry is the shared index's entry protocol: the set of workers
// that hold one content (position, sequence hash), found in a lane's shard
// table, read lock-free by queries and changed by the lane that owns the
// worker.
//
// An entry (the design's SeqEntry) is keyed in a shardmap.Map by its
// position and sequence hash. The sequence hash names the whole prefix, so
// finding an entry is one table probe however many prefixes put the same
// chunk at the same position.
//
// An entry's value takes one of two forms, fixed per index (Sets):
//
//   - inline (at most 64 workers, or 64 a plane: Writer.Plane): the value
//     is the worker set itself, one word. A table slot never changes key
//     and its value is published atomically, so a reader that finds the
//     key reads one consistent set; a store is one table write, with
//     nothing else to allocate or free.
//   - a handle (wider sets): the value is the arena.Handle of a slot holding
//     the version, sequence hash and worker words, tagged with the value's
//     top bit; readers validate the version around their read of the
//     words. A value without the tag is an inline set of worker slots 0 to
//     62: an entry whose workers all took low slots (slots go lowest
//     first, so a fleet running below its MaxWorkers keeps all of them
//     there) costs what it does in the inline form. The first worker past
//     them moves the set to an arena slot (written before its handle is
//     published), and the value becomes an inline set again when the last
//     one leaves (the value changes before the slot is freed, so a reader
//     that finds the slot stale looks again and finds the set).
//
// Contract:
//
//   - Readers (Find, Read, Holds) take no lock and MAY run concurrently with
//     any writer. Read reports ok = false when the slot it read was freed or
//     reused meanwhile; the caller MUST look the entry up again.
//   - A worker's bit MUST be changed only by the Writer of the lane that owns
//     the worker: Attach and Detach hold the entry's shard lock (or the lane
//     writes its table alone), so entries shared by workers of different
//     lanes stay consistent.
//   - Detach MUST name a bit that is set; the last worker out deletes the
//     entry (and frees its arena slot), so an empty entry is never kept.
package entry
