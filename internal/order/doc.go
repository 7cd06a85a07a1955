// Package order holds the memory-ordering primitives the index's writers
// use, in one place: a release store (Publish), a plain store for words no
// reader can use yet (Init, an atomic store under the race detector), and
// a prefetch.
//
// Contract: a word that readers load with sync/atomic while a writer
// changes it is written with Publish; a reader that sees the new value
// sees every store the writer made before it. A word no
// reader can reach yet, or whose readers discard what they read after
// validating a version, is written with Init; the Publish that makes it
// reachable orders it. Prefetch changes nothing a program can observe but
// timing, and never faults.
//
// # Design
//
// Prefetch and PrefetchLines are PREFETCHT0 in assembly on amd64 (gc,
// without the purego, noasm and race tags, as every assembly routine of
// the module); elsewhere they do nothing. Under -race, Init is an atomic
// store the race detector sees.
package order
