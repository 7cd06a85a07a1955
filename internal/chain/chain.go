// Package chain is the sequence-hash chain of the design (§3): the hash of
// a prefix through a block from the hash of the prefix before it and the
// block's local hash, as Dynamo's router computes it.
package chain

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/zeebo/xxh3"
)

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

// littleEndian reports whether uint32 tokens are laid out in memory as the
// little-endian bytes the local hash is defined over, so they can be
// hashed in place.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// HashTokens returns XXH3-64 with seed over tokens as little-endian uint32
// bytes, a block's local hash. On little-endian machines it hashes the
// tokens in place; elsewhere it writes their bytes into *buf (grown as
// needed, nil for a new one each call).
func HashTokens(tokens []uint32, seed uint64, buf *[]byte) uint64 {
	if littleEndian {
		return xxh3.HashSeed(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(tokens))), 4*len(tokens)), seed)
	}
	var b []byte
	if buf != nil {
		b = (*buf)[:0]
	}
	for _, t := range tokens {
		b = binary.LittleEndian.AppendUint32(b, t)
	}
	if buf != nil {
		*buf = b
	}
	return xxh3.HashSeed(b, seed)
}
