// Package keyhash is the keyed slot hash of the index's hash tables: the
// shared tables (package shardmap) and each worker's private maps place
// their keys with it, under a secret drawn per process (or per worker).
//
// The keys are hashes of user prompts. An attacker who could choose keys
// that collide in the low bits of an unkeyed table could make every probe
// walk a long cluster; under a secret (k0, k1) unknown to them, crafted keys
// spread as random ones do.
package keyhash

import "math/bits"

// Hash is the keyed slot hash of key under the secret (k0, k1), k1 odd.
// Its low bits pick a table's bucket, its top bits the shard (and the
// private maps' tags).
//
// Both factors of the 128-bit product depend on the key: key ⊕ k0, and the
// key with its halves swapped ⊕ k1; the product's halves are XORed, and the
// upper half folded into the lower. A constant second factor left a linear
// structure: keys that differ only in some high bits (as crafted keys
// would) landed in runs of neighbouring buckets under some secrets (up to
// 29 probes at the 99th percentile, shardmap's TestMap_HashFloodingBounded
// failing a few runs in a hundred). The rotation and the xor cost a cycle
// beside the multiply. An even k1 (0: tests) hashes every key alike.
func Hash(key, k0, k1 uint64) uint64 {
	y := (bits.RotateLeft64(key, 32) ^ k1) & -(k1 & 1)
	hi, lo := bits.Mul64(key^k0, y)
	h := hi ^ lo
	return h ^ h>>32
}

// Key is a key with its slot hash under one secret, for a writer that
// names one key in several calls (prefetches, then the write): each call
// that takes a Key skips hashing it again.
type Key struct{ K, H uint64 }

// Keyer hashes keys under one secret (k0, k1), as Hash, from a value a
// loop keeps in two registers.
type Keyer struct{ k0, k1 uint64 }

// New returns the Keyer of the secret (k0, k1).
func New(k0, k1 uint64) Keyer { return Keyer{k0, k1} }

// Hash returns Hash(key, k0, k1) of the Keyer's secret.
func (k Keyer) Hash(key uint64) uint64 { return Hash(key, k.k0, k.k1) }

// Key returns key with its slot hash.
func (k Keyer) Key(key uint64) Key { return Key{key, k.Hash(key)} }

// Degenerate reports whether the secret's k1 is even, which hashes every
// key alike (Hash): a process's secret never is; tests make one to collide
// keys.
func (k Keyer) Degenerate() bool { return k.k1&1 == 0 }
