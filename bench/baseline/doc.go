// Package baseline holds the five earlier generations of the index that the
// seed article measures its final design against, rendered in Go as a
// competent engineer would write them, behind flash.Index so that the same
// conformance suite and the same benchmarks run them all:
//
//  1. Naive: worker → local hash → set of sequence hashes; a query walks
//     every worker along the query, O(W×D). RWMutex.
//  2. Actor: the naive map owned by one goroutine; events and queries go
//     through a channel, so reads wait behind writes.
//  3. Inverted: local hash → sequence hash → set of workers; a query walks
//     the query once, O(D+W). RWMutex.
//  4. Radix: a tree whose children are keyed by local hash, a worker set per
//     node, a per-worker lookup content → node; one owner goroutine.
//  5. ConcurrentRadix: the tree with an RWMutex per node, queries inline on
//     the caller's goroutine taking read locks, events on sticky writer
//     goroutines that own their workers' lookups.
//
// Naive, Actor and Inverted are blind to chunk collisions by design: they
// test "does the worker hold some block with this local hash" (Naive and
// Actor: anywhere in its cache, as the seed's dict does; Inverted: at the
// position the query reaches it), not "this prefix". A query that diverges
// and later has the same chunk (templated prompts) is answered too deep.
// BlindCases lists the conformance cases they cannot pass and why.
//
// Every backend resolves events through the reference model's front
// (model.Front): parent lookup by external hash, sequence hashes computed
// from the parent's, validation, counters; it tells the backend which
// contents a worker starts or stops holding and, in an index of several
// tiers, the fastest tier each is in (model.TierSink). The backends differ
// only in the index they keep and how they answer queries. Each keeps the
// fastest tier beside its worker sets, only for contents not in tier 0, and
// a query folds the fastest tiers of the positions a worker holds into its
// nested tier depths, so a one-tier index keeps the structure it had.
package baseline
