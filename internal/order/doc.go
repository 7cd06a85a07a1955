// Package order holds the memory-ordering primitives the index's writers
// use, in one place: a release store that costs no locked instruction, a
// prefetch, and the twins that switch to sync/atomic under the race
// detector.
//
// Contract: a word that readers load with sync/atomic while a writer
// changes it is written with Publish (or StoreRelease); a reader that sees
// the new value sees every store the writer made before it. A word no
// reader can reach yet, or whose readers discard what they read after
// validating a version, is written with Init; the Publish that makes it
// reachable orders it. Prefetch changes nothing a program can observe but
// timing, and never faults.
//
// # Design
//
// On amd64 (gc, without the purego and noasm tags) StoreRelease is one
// plain MOVQ in assembly: x86-64 makes a core's stores visible in program
// order (StoresInOrder), so the word is seen only after every store before
// it, and the compiler moves no store across the call; atomic.StoreUint64
// would be a locked exchange that first drains the store buffer. Elsewhere
// it is atomic.StoreUint64. Under -race, Init and Publish are atomic stores
// the race detector sees (it does not see assembly stores).
package order
