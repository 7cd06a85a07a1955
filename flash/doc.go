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
//   - AddWorker(w) (WorkerAdder): w takes a slot, holding nothing, ahead of
//     its first event; nothing changes if it has one.
//
// A worker's depth for a query is the largest d such that for every i < d the
// worker holds (in any tier, see Tiers) a block at position i whose sequence
// hash is the query's seq[i]. Workers of depth 0 are absent from the result. This is exact: a
// query that diverges and later has the same chunk at the same position stops
// at the divergence; a block removed from the middle of a chain stops the
// depth there until it is stored again, after which the blocks behind it
// count again.
//
// A worker takes a slot (of Config.MaxWorkers) when its first block is stored
// (or when it is declared, AddWorker) and frees it only through RemoveWorker;
// a Stored event for a new worker, or an AddWorker, when every slot is taken
// is rejected with ErrTooManyWorkers.
//
// Every rejection and every skipped input is counted in Stats.
//
// # Tiers
//
// Engines keep cached blocks beyond the GPU: vLLM's offloading connector
// and LMCache copy them to CPU memory and further, to disk, and publish
// events for each copy. An index is configured with its tiers, fastest
// first (Config.Tiers: by default the GPU alone, at most MaxTiers), and
// every Stored and Removed event names one (Event.Tier; the zero value is
// the fastest). One engine id names the same content in every tier of a
// worker: a worker holds each of its blocks in a set of tiers.
//
//   - Stored in tier t adds t to each block's tiers: a block already in t
//     is a duplicate; one held in other tiers only is stored (counted as
//     such). Its parent is looked up in every tier: a parent may be held in
//     another tier than its child. The conflict rules above hold across
//     tiers.
//   - Removed from tier t takes t from each listed block; a block the
//     worker does not hold in t is counted and skipped (RemovesUnknown).
//     A block whose last tier leaves is gone, as with one tier.
//   - Cleared empties every tier, or only Event.Tier when Event.TierOnly
//     is set (Event.InTier).
//   - An event naming a tier the index does not have is rejected
//     (ErrBadTier).
//
// A query reports, for each worker, Depth: the longest prefix whose every
// block the worker holds in some tier; and, for each tier t,
// Match.TierDepth[t]: the longest prefix whose every block it holds in t or
// a faster tier. These nest (TierDepth[0] ≤ … ≤ Depth), and each is
// prefix-closed, as the depth of one tier is. Predicted blocks count in the
// fastest tier: the request computes them there. Scores.Best weighs each
// tier's blocks (TierSpec.Weight). An index of one tier answers as if tiers
// did not exist, with TierDepth[0] = Depth.
//
// # Predictions
//
// A router that sends a request to a worker knows that worker will soon
// hold the prompt's blocks, before (or without) the engine's events. A
// Predictor records that: Predict(w, q, ttl) says w holds the blocks of q,
// positions 0 to len(q)−1, until now+ttl on Config.Clock. Per worker:
//
//   - Each predicted block's expiry becomes the later of its own and
//     now+ttl: a later prediction of the same or a longer prompt extends
//     every block it covers, a shorter ttl never shortens one. A parent
//     therefore never expires before its child.
//   - A prediction lasts while now < its expiry; queries see it until its
//     writer drops it, at the writer's next prediction, within 10 ms, or at
//     a Flush (which drops every prediction expired at its call). After
//     Close no timer runs: expired predictions leave at a Flush.
//   - Past Config.MaxPredicted blocks, the block that expires first leaves
//     first; among blocks expiring together, the deepest, then the lowest
//     sequence hash.
//   - When an exact content leaves the worker (Removed, the last engine id
//     naming it, or its last tier), its prediction leaves too, with every
//     predicted block below it; a Cleared event of one tier of several
//     takes the predictions of what leaves with it. Cleared of every tier
//     and RemoveWorker drop all of the worker's predictions. Stored
//     blocks stay predicted until they expire.
//   - A worker first seen in a prediction takes a slot, as its first
//     Stored event would.
//
// So a worker's predicted blocks stay prefix-closed, as its exact ones
// are. A query reports, for each worker, Depth: the longer of the leading
// blocks it holds (by its events) and those predicted for it, and
// Predicted: how many of them rest on predictions alone (Match).
//
// # Operations
//
// New builds the Flash index (Indexer): events apply on pinned writer
// goroutines, sticky by worker ID (WithWriters(0): on the caller's
// goroutine), each lane alone writing its workers' private state and their
// bits in the shared index (a table per position from sequence hash to the
// set of workers holding that content); FindMatches runs a jump search over
// it on the caller's goroutine without locks. Dump and Restore write and
// load checksummed snapshots. docs/ARCHITECTURE.md describes the design,
// docs/RELIABILITY.md lists every promise with its test.
//
// # Concurrency
//
// The engine's invariants between events (attachment, bits, ghosts) are
// internal/worker's; docs/ARCHITECTURE.md explains them. While events
// apply:
//
//   - A reader MUST NOT block a writer, nor a writer a reader: queries take
//     no lock and write nothing shared but striped counters.
//   - A query MUST report each worker at most once, and only a worker that
//     held the reported prefix at some instant during the query; for a
//     worker being written, it MAY report its depth before the write, after
//     it, or between (the blocks of a Stored batch are attached parent
//     first, one at a time).
//   - A rejected event MUST change nothing: validation runs over the whole
//     batch before the first shared write.
//   - A slot of a removed worker MAY be reused by a new worker while a query
//     runs; the query then searches again and reports a slot's worker only
//     if it held the slot throughout.
//   - A table replaced by a rebuild MAY be reused for another shard while
//     a query reads it; the query then searches again (shardmap's Epoch).
//
// # Hashing
//
// Local hashes are XXH3-64 with seed 1337 over a block's uint32 tokens as
// little-endian bytes (HashTokens, TokenHasher); a LoRA adapter changes the
// seed (LoRASeed). Sequence hashes chain as Dynamo's router does (Chain), so
// queries may carry sequence hashes computed by any compatible frontend.
package flash
