// Package flash is a concurrent, exact, global index of the KV-cache blocks
// held by LLM inference workers. A KV-aware router feeds it the workers' cache
// events and asks it, per request, which workers hold the longest prefix of
// the prompt.
//
// # Contract
//
// FindMatches may be called from any number of goroutines at once, concurrently
// with Apply; it takes no lock and never waits for writers, and with a reused
// Scores it allocates nothing. Apply may be called from any goroutine, but the
// events of one worker must be applied in the order the worker emitted them
// (from one goroutine, or serialized by the caller). Apply copies the event:
// the caller may reuse its slices at once. Flush is a barrier: once it
// returns, every event accepted before the call is visible to queries.
//
// # Semantics
//
// Per worker, events apply in order:
//
//   - Stored{Parent (optional), Blocks}: block i's parent is block i-1, block
//     0's parent is Parent, or none (position 0). The parent is looked up among
//     the same worker's blocks; the batch is placed right after it, and each
//     block's sequence hash is computed from its parent's and its own local
//     hash (see Chain), so events may carry any engine's opaque hashes. An
//     unknown parent rejects the whole event (ErrUnknownParent). A block the
//     worker already holds at the same place is a duplicate (counted, no
//     effect: holding is a set, not a count). An external hash the worker
//     holds at another position, or with another sequence hash, or twice in
//     one batch, rejects the event (ErrHashConflict). The same content (same
//     position and sequence hash) under several external hashes is held while
//     any of them is. Rejected events change nothing.
//   - Removed{Hashes}: each listed block leaves the worker; unknown hashes are
//     counted and skipped.
//   - Cleared: the worker (that DP rank only) holds nothing.
//   - RemoveWorker(id): every DP rank of id disappears; its slot is reused.
//
// A worker's depth for a query is the largest d such that for every i < d the
// worker holds a block at position i whose sequence hash is the query's
// seq[i]. Workers of depth 0 are absent from the result. This is exact: a
// query that diverges and later has the same chunk at the same position stops
// at the divergence; a block removed from the middle of a chain stops the
// depth there until it is stored again, after which the blocks behind it
// count again.
//
// A worker takes a slot (of Config.MaxWorkers) when its first block is stored
// and frees it only through RemoveWorker; a Stored event for a new worker when
// every slot is taken is rejected with ErrTooManyWorkers.
//
// Every rejection and every skipped input is counted in Stats.
//
// # Operations
//
// New builds the Flash index (Indexer): events apply on pinned writer
// goroutines, sticky by worker ID (WithWriters(0): on the caller's
// goroutine, under its worker's lane; with WithSyncLanes callers whose
// workers are in different lanes, LaneOf, apply in parallel); FindMatches
// runs on the caller's goroutine without locks. TryApply refuses
// instead of waiting when a writer's queue is full. WithEventIDs detects gaps
// and restarts in each worker's event ids and reports them for resync. Dump
// and Restore write and load versioned, checksummed snapshots of all or some
// workers; a damaged snapshot changes nothing. docs/RELIABILITY.md lists
// every promise with the test that shows it.
//
// # Hashing
//
// Local hashes are XXH3-64 with seed 1337 over a block's uint32 tokens as
// little-endian bytes (HashTokens, TokenHasher); a LoRA adapter changes the
// seed (LoRASeed). Sequence hashes chain as Dynamo's router does (Chain), so
// queries may carry sequence hashes computed by any compatible frontend.
package flash
