// Package search answers a query over the shared index: package jump's
// search, specialized to a prober that reads the shared entries (package
// entry) of every lane table, and turns worker slots into workers through
// the slot directory (package slots).
//
// Contract:
//
//   - Run takes no lock and writes nothing shared; it MAY run concurrently
//     with any writer and with other searches (each with its own Finder).
//   - Each worker is reported at most once, and only a worker that held the
//     reported prefix at some instant during the search.
//   - When a slot changes hands during a search (the directory's epoch odd
//     or moved), the search runs again and reports a slot's worker only if
//     it took the slot before the search began and held it throughout.
//   - A probe that keeps finding its arena slot reused counts as a miss
//     after MaxProbeRetries tries (only a writer freeing and reusing that
//     very slot continuously could get there).
//   - Probes peek (shardmap.Map.Peek): when a table it read reused a
//     replaced table meanwhile (the tables' epochs moved), the search runs
//     again; after MaxSearchRetries runs each probe checks its table's epoch
//     itself and retries, counting as a miss after MaxProbeRetries tries.
//     So what a search reports never comes from a table reused under it.
package search
