package worker

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/chain"
	"github.com/flashindexer/flashindexer/shardmap"
)

// seqKeys gives each block the table key of its sequence hash, as the
// chain block by block and Map.Key give it: batches at position 0 (the
// first block's hash its local hash) and under a parent, of 0 to 70
// blocks; and its loop (assembly on amd64) writes what chainKeysGo does.
func TestSeqKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	m := shardmap.New()
	keys, goKeys := make([]shardmap.Key, 80), make([]shardmap.Key, 80)
	for step := range 3000 {
		blocks := make([]Block, r.IntN(71))
		for i := range blocks {
			blocks[i] = Block{Hash: r.Uint64(), Local: r.Uint64()}
		}
		root, prev := r.IntN(2) == 0, r.Uint64()
		seqKeys(keys, blocks, prev, root, m.Keyer())
		chainKeysGo(goKeys, blocks, prev, m.Keyer())
		if !root && !slices.Equal(keys[:len(blocks)], goKeys[:len(blocks)]) {
			t.Fatalf("step %d: chainKeys and chainKeysGo differ", step)
		}
		for i, b := range blocks {
			seq := chain.Chain(prev, b.Local)
			if i == 0 && root {
				seq = b.Local
			}
			prev = seq
			if keys[i] != m.Key(seq) {
				t.Fatalf("step %d (root %v): block %d: key %+v, want %+v", step, root, i, keys[i], m.Key(seq))
			}
		}
	}
}

// idHashes gives each block its engine id's hash and home bucket as
// idHash and idAddr do, and writes no address past the batch's or, without
// addrs, none.
func TestIDHashes(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	for _, degenerate := range []bool{false, true} {
		ws := &State{k0: r.Uint64(), k1: r.Uint64() | 1}
		if degenerate {
			ws.k1 = 0
		}
		ws.ids.alloc(idBuckets(500))
		pending := make([]pendingBlock, 70)
		addrs := make([]uintptr, 71)
		for step := range 500 {
			blocks := make([]Block, r.IntN(71))
			for i := range blocks {
				blocks[i].Hash = r.Uint64() >> r.IntN(64)
			}
			for i := range addrs {
				addrs[i] = 1
			}
			with := r.IntN(2) == 0
			if with {
				ws.idHashes(blocks, pending, addrs)
			} else {
				ws.idHashes(blocks, pending, nil)
			}
			// Its loop (assembly on amd64) writes what hashIDsGo does.
			goPending, goAddrs := make([]pendingBlock, len(blocks)), make([]uintptr, len(blocks))
			if !with {
				goAddrs = nil
			}
			hashIDsGo(goPending, blocks, goAddrs, shardmap.NewKeyer(ws.k0, ws.k1), uintptr(unsafe.Pointer(unsafe.SliceData(ws.ids.b))), uintptr(ws.ids.bmask))
			if !slices.Equal(pending[:len(blocks)], goPending) || with && !slices.Equal(addrs[:len(blocks)], goAddrs) {
				t.Fatalf("step %d: hashIDs and hashIDsGo differ", step)
			}
			for i, b := range blocks {
				h := ws.idHash(b.Hash)
				if pending[i].idh != h {
					t.Fatalf("step %d: block %d: idh %#x, want %#x", step, i, pending[i].idh, h)
				}
				if want := ws.idAddr(h); with && addrs[i] != want {
					t.Fatalf("step %d: block %d: address %#x, want %#x", step, i, addrs[i], want)
				}
			}
			for i := range addrs {
				if (!with || i >= len(blocks)) && addrs[i] != 1 {
					t.Fatalf("step %d (addresses: %v): addrs[%d] of %d blocks written", step, with, i, len(blocks))
				}
			}
		}
	}
}
