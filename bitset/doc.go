// Package bitset provides fixed-width worker sets laid over []uint64 words,
// for sets stored inline in arena slots and for scratch sets of a query.
//
// Two kinds of words, two kinds of functions: shared words (in an arena slot,
// written by writers while readers run) are only touched through the Atomic*
// functions and through the second operand of AndInto and IsSubset,
// which load it atomically; scratch words owned by one goroutine use the plain
// functions. Nothing here allocates or locks, except Slots.
//
// # Design
//
// Bit i of a set lives in word i/64 at bit i%64. A set of width n has
// Words(n) words; both operands of a binary operation have the same length
// (the shorter length is used). Popcounts go through math/bits, which the
// compiler turns into POPCNT. (AVX-512 and AVX2 subset kernels stood behind
// IsSubset for sets of 1,024 workers and more; FindMatches over the
// trace's queries was no faster with them at 1,024 or 4,096 workers, so
// they went.)
//
// # Invariants
//
//   - A shared word is never written with a plain store: writers use
//     AtomicSet and AtomicClear, so readers may load it at any time.
//   - Slots hands out the lowest free index, so worker slots stay dense and
//     sets stay narrow.
package bitset
