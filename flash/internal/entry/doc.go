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
//   - wide (more than 128 workers): the value is the set in one of three
//     shapes, whichever is the smallest that holds it (entry.go): a word of
//     worker slots 0 to 61, a list of a few slot numbers, or the tagged
//     arena.Handle of a slot holding a bitset of every worker. Most
//     entries are held by one to a few workers, so most cost their table
//     slot alone however wide the fleet. A set that outgrows a list moves
//     to an arena slot, written before its handle is published; one that
//     shrinks back becomes a value again before the slot is freed, so a
//     reader that finds the slot stale looks again and finds the value.
//     Readers validate a handle's version around their read of the words.

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
