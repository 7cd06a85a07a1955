package flash_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
)

// forgeNode is one node of a hand-made snapshot.
type forgeNode struct {
	parent, pos uint32
	seq         flash.SeqHash
	local       flash.LocalHash
	ids         []uint64
}

// forge writes a snapshot of one worker in the format Dump writes (version
// 2), or in version 1 (with each node's local hash), with a valid checksum:
// the checksum is unkeyed, so anyone can make one.
func forge(version uint32, w flash.Worker, nodes []forgeNode) []byte {
	var b []byte
	u32 := func(v uint32) { b = binary.LittleEndian.AppendUint32(b, v) }
	u64 := func(v uint64) { b = binary.LittleEndian.AppendUint64(b, v) }
	b = append(b, "FLASHSNP"...)
	u32(version)
	u32(1)
	u64(w.ID)
	u32(w.DPRank)
	u32(uint32(len(nodes)))
	for _, n := range nodes {
		u32(n.parent)
		u32(n.pos)
		u64(uint64(n.seq))
		if version == 1 {
			u64(uint64(n.local))
		}
		u32(uint32(len(n.ids)))
		for _, id := range n.ids {
			u64(id)
		}
	}
	return binary.LittleEndian.AppendUint64(b, xxh3.Hash(b))
}

// reseal replaces a snapshot's checksum with the right one.
func reseal(b []byte) []byte {
	if len(b) < 8 {
		return b
	}
	body := b[:len(b)-8]
	return binary.LittleEndian.AppendUint64(slices.Clone(body), xxh3.Hash(body))
}

// A snapshot whose checksum is right but whose worker lists one block twice
// (the same position and sequence hash, under engine ids 1 and 2) is
// refused, and the index is unchanged; the events that would have found the
// broken state (before: depth 0 after Removed(1), a panic in detach on
// Removed(2)) apply as to any unknown worker.
func TestSnapshot_ForgedDuplicateRejected(t *testing.T) {
	p := flashtest.Seqs(5, 2)
	seqs := p.Seq()
	w := flash.Worker{ID: 9}
	for name, nodes := range map[string][]forgeNode{
		"root twice": {
			{pos: 0, seq: seqs[0], local: p[0], ids: []uint64{1}},
			{pos: 0, seq: seqs[0], local: p[0], ids: []uint64{2}},
		},
		"child twice": {
			{pos: 0, seq: seqs[0], local: p[0], ids: []uint64{1}},
			{parent: 1, pos: 1, seq: seqs[1], local: p[1], ids: []uint64{2}},
			{parent: 1, pos: 1, seq: seqs[1], local: p[1], ids: []uint64{3}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			for _, c := range []struct{ writers, version int }{{0, 1}, {1, 1}, {0, 2}, {1, 2}} {
				writers := c.writers
				ix := flash.New(flash.WithWriters(writers))
				other := flash.Worker{ID: 1}
				_ = ix.Apply(p.StoreEvent(other, 0, 2, 0))
				err := ix.Restore(bytes.NewReader(forge(uint32(c.version), w, nodes)))
				if !errors.Is(err, flash.ErrSnapshot) {
					t.Fatalf("writers %d: Restore of a duplicate block: %v, want ErrSnapshot", writers, err)
				}
				for id := uint64(1); id <= 3; id++ {
					_ = ix.Apply(flash.RemovedEvent(w, flash.ExternalHash(id)))
				}
				ix.Flush()
				var sc flash.Scores
				ix.FindMatches(flash.Query{Locals: p}, &sc)
				if ix.Workers() != 1 || len(sc.Matches) != 1 || sc.Matches[0].Worker != other || sc.Matches[0].Depth != 2 {
					t.Fatalf("writers %d: %d workers, matches %v", writers, ix.Workers(), sc.Matches)
				}
				ix.Close()
			}
		})
	}
}

// A version 1 snapshot (each node with its local hash) still loads, and
// its chains are checked: a child whose sequence hash is not its parent's
// chained with its local hash is refused.
func TestSnapshot_Version1Loads(t *testing.T) {
	p := flashtest.Seqs(5, 3)
	seqs := p.Seq()
	w := flash.Worker{ID: 9}
	nodes := []forgeNode{
		{pos: 0, seq: seqs[0], local: p[0], ids: []uint64{1}},
		{parent: 1, pos: 1, seq: seqs[1], local: p[1], ids: []uint64{2}},
		{parent: 2, pos: 2, seq: seqs[2], local: p[2], ids: []uint64{3}},
	}
	ix := flash.New(flash.WithWriters(0))
	defer ix.Close()
	if err := ix.Restore(bytes.NewReader(forge(1, w, nodes))); err != nil {
		t.Fatal(err)
	}
	var sc flash.Scores
	ix.FindMatches(flash.Query{Locals: p}, &sc)
	if len(sc.Matches) != 1 || sc.Matches[0].Worker != w || sc.Matches[0].Depth != 3 {
		t.Fatalf("matches %v, want worker 9 at depth 3", sc.Matches)
	}
	nodes[2].local++
	if err := ix.Restore(bytes.NewReader(forge(1, w, nodes))); !errors.Is(err, flash.ErrSnapshot) {
		t.Fatalf("a broken chain in version 1: %v, want ErrSnapshot", err)
	}
	if err := ix.Restore(bytes.NewReader(forge(3, w, nodes))); !errors.Is(err, flash.ErrSnapshot) {
		t.Fatalf("version 3: %v, want ErrSnapshot", err)
	}
}

// Resealed damage: any change to a real snapshot, with the checksum made
// right again, is refused with ErrSnapshot or restores a state on which
// every later event applies without a panic (the flash_invariants build
// checks each worker after each of them).
func TestSnapshot_ResealedDamageNeverPanics(t *testing.T) {
	prompts := snapshotPrompts()
	src := flash.New(flash.WithWriters(0))
	defer src.Close()
	churn(src, rand.New(rand.NewPCG(6, 6)), prompts, 4, 600)
	var snap bytes.Buffer
	if _, err := src.Dump(&snap); err != nil {
		t.Fatal(err)
	}
	good := snap.Bytes()
	r := rand.New(rand.NewPCG(7, 7))
	cases, accepted := 600, 0
	if testing.Short() {
		cases = 200
	}
	for i := 0; i < cases; i++ {
		bad := slices.Clone(good[:len(good)-8])
		for k := 0; k <= r.IntN(3); k++ {
			// Mostly small values in the 4-byte fields: parents, positions,
			// counts that stay plausible.
			at := 12 + r.IntN(len(bad)-12)
			if r.IntN(2) == 0 {
				bad[at] = byte(r.IntN(4))
			} else {
				bad[at] ^= byte(1 + r.IntN(255))
			}
		}
		dst := flash.New(flash.WithWriters(0))
		err := dst.Restore(bytes.NewReader(reseal(append(bad, 0, 0, 0, 0, 0, 0, 0, 0))))
		if err != nil && !errors.Is(err, flash.ErrSnapshot) {
			t.Fatalf("case %d: %v", i, err)
		}
		if err == nil {
			accepted++
		}
		churn(dst, rand.New(rand.NewPCG(8, uint64(i))), prompts, 4, 200)
		var held []flash.Worker
		dst.WorkerBlocks(func(w flash.Worker, _ int) { held = append(held, w) })
		for _, w := range held {
			_ = dst.Apply(flash.ClearedEvent(w))
		}
		var sc flash.Scores
		for _, p := range prompts {
			dst.FindMatches(flash.Query{Locals: p}, &sc)
			if len(sc.Matches) != 0 {
				t.Fatalf("case %d: matches %v after every worker cleared", i, sc.Matches)
			}
		}
		dst.Close()
	}
	t.Logf("%d of %d resealed snapshots accepted", accepted, cases)
}
