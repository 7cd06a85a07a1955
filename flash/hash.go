package flash

import (
	"github.com/zeebo/xxh3"

	"github.com/flashindexer/flashindexer/internal/chain"
)

// Seed is the XXH3 seed of local and sequence hashes (Dynamo's router uses it).
const Seed = chain.Seed

// LoRASeed returns the local-hash seed for blocks computed under a LoRA adapter:
// Seed + XXH3-64(name), wrapping. The empty name is the base model: Seed.
func LoRASeed(name string) uint64 {
	if name == "" {
		return Seed
	}
	return Seed + xxh3.HashString(name)
}

// HashTokens returns the local hash of one block: XXH3-64 with seed over the
// tokens as little-endian uint32 bytes. It allocates nothing on little-endian
// machines; elsewhere use a TokenHasher, which reuses a buffer.
func HashTokens(tokens []uint32, seed uint64) LocalHash {
	return LocalHash(chain.HashTokens(tokens, seed, nil))
}

// Chain returns the sequence hash of a block whose parent has sequence hash
// prev: XXH3-64(le64(prev) ‖ le64(local)) with Seed, as Dynamo's router
// computes it. The first block's sequence hash is its local hash.
func Chain(prev SeqHash, local LocalHash) SeqHash {
	return SeqHash(chain.Chain(uint64(prev), uint64(local)))
}

// ChainLocals appends to dst the sequence hashes of locals, a prefix from
// position 0, and returns the extended slice.
func ChainLocals(dst []SeqHash, locals []LocalHash) []SeqHash {
	for i, l := range locals {
		s := SeqHash(l)
		if i > 0 {
			s = Chain(dst[len(dst)-1], l)
		}
		dst = append(dst, s)
	}
	return dst
}

// TokenHasher turns token ids into block hashes the way a router does. A
// partial last block is not hashed. It is not safe for concurrent use; give
// each goroutine its own. With reused destination slices it allocates nothing.
type TokenHasher struct {
	blockSize int
	seed      uint64
	buf       []byte // token bytes on big-endian machines
}

// NewTokenHasher returns a hasher for blocks of blockSize tokens under the LoRA
// adapter lora ("" for the base model). It panics if blockSize < 1, a
// programming error.
func NewTokenHasher(blockSize int, lora string) *TokenHasher {
	if blockSize < 1 {
		panic("flash: NewTokenHasher: block size must be positive")
	}
	return &TokenHasher{blockSize: blockSize, seed: LoRASeed(lora)}
}

// BlockSize returns the number of tokens per block.
func (h *TokenHasher) BlockSize() int { return h.blockSize }

// LocalHashes appends the local hashes of the full blocks of tokens to dst.
func (h *TokenHasher) LocalHashes(dst []LocalHash, tokens []uint32) []LocalHash {
	for len(tokens) >= h.blockSize {
		dst = append(dst, LocalHash(chain.HashTokens(tokens[:h.blockSize], h.seed, &h.buf)))
		tokens = tokens[h.blockSize:]
	}
	return dst
}

// Query fills q from tokens: the local hash and the sequence hash of every
// full block. It reuses the capacity of q.Locals and q.Seqs.
func (h *TokenHasher) Query(q *Query, tokens []uint32) {
	q.Locals = h.LocalHashes(q.Locals[:0], tokens)
	q.Seqs = ChainLocals(q.Seqs[:0], q.Locals)
}
