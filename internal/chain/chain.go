// Package chain is the sequence-hash chain of the design (§3): the hash of
// a prefix through a block from the hash of the prefix before it and the
// block's local hash, as Dynamo's router computes it.
package chain

import "math/bits"

// Seed is the XXH3 seed of local hashes and of the chain.
const Seed uint64 = 1337

// Chain returns XXH3-64(le64(prev) ‖ le64(local)) with Seed.
//
// It is XXH3's 9-to-16-byte path written out for 16 bytes and Seed: one
// 64×64→128 multiply and an avalanche, no dispatch on the length; every
// stored block and every lazily hashed query block goes through it.
// flash's TestChain_IsXXH3 checks it against the library.
func Chain(prev, local uint64) uint64 {
	lo := prev ^ Flip1
	hi := local ^ Flip2
	h, l := bits.Mul64(lo, hi)
	acc := 16 + bits.ReverseBytes64(lo) + hi + (h ^ l)
	acc ^= acc >> 37
	acc *= Prime
	return acc ^ acc>>32
}

// Flip1 and Flip2 are XXH3's bitflips of a 9-to-16-byte input under Seed:
// (secret[24:32] ^ secret[32:40]) + Seed and (secret[40:48] ^
// secret[48:56]) - Seed, of its default secret; Prime is the multiplier
// of its avalanche. Exported for the assembly that chains (go_asm.h of
// flash/internal/worker).
const (
	Flip1 = 0x6782737bea423ef2
	Flip2 = 0xaf56bc3b09964d01
	Prime = 0x165667919e3779f9
)
