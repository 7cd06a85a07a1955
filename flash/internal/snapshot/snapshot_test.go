package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/zeebo/xxh3"
)

// sample is a snapshot of two workers: a chain with a ghost in the middle
// and a second engine id on one block, and a branching tree.
func sample() []Worker {
	return []Worker{
		{ID: 1, Rank: 0, Nodes: []Node{
			{Parent: 0, Pos: 0, Seq: 11, IDs: []uint64{100}},
			{Parent: 1, Pos: 1, Seq: 12}, // a ghost: kept for its child
			{Parent: 2, Pos: 2, Seq: 13, IDs: []uint64{102, 103}},
		}},
		{ID: 2, Rank: 3, Nodes: []Node{
			{Parent: 0, Pos: 0, Seq: 21, IDs: []uint64{200}},
			{Parent: 1, Pos: 1, Seq: 22, IDs: []uint64{201}},
			{Parent: 1, Pos: 1, Seq: 23, IDs: []uint64{202}},
		}},
	}
}

func encode(t testing.TB, all []Worker) []byte {
	var b bytes.Buffer
	if _, err := Write(&b, all); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// What Write writes, Read returns, and a damaged copy is refused.
func TestSnapshot_RoundTripAndDamage(t *testing.T) {
	data := encode(t, sample())
	got, err := Read(bytes.NewReader(data), 1<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	if again := encode(t, got); !bytes.Equal(again, data) {
		t.Fatal("Read then Write does not give the snapshot back")
	}
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"truncated", data[:len(data)-3]},
		{"a flipped bit", func() []byte { d := bytes.Clone(data); d[20] ^= 4; return d }()},
		{"empty", nil},
	} {
		if _, err := Read(bytes.NewReader(c.data), 1<<20, 1); !errors.Is(err, ErrSnapshot) {
			t.Errorf("%s: %v, want ErrSnapshot", c.name, err)
		}
	}
	if _, err := Read(bytes.NewReader(data), 2, 1); !errors.Is(err, ErrSnapshot) {
		t.Errorf("a position past the maximum depth: %v, want ErrSnapshot", err)
	}
}

// sealed returns body (a snapshot without its checksum) with its checksum,
// so that fuzzing reaches the structural checks behind it.
func sealed(body []byte) []byte {
	return binary.LittleEndian.AppendUint64(bytes.Clone(body), xxh3.Hash(body))
}

// FuzzRead: Read never panics, and what it accepts obeys the package's
// contract, checked here on its own, and (the current version) is what
// Write writes for it.
func FuzzRead(f *testing.F) {
	d := encode(f, sample())
	f.Add(d[:len(d)-8])
	d = encode(f, sample()[1:])
	f.Add(d[:len(d)-8])
	f.Fuzz(func(t *testing.T, body []byte) {
		data := sealed(body)
		ws, err := Read(bytes.NewReader(data), 1<<16, 3)
		if err != nil {
			if !errors.Is(err, ErrSnapshot) {
				t.Fatalf("error %v does not wrap ErrSnapshot", err)
			}
			return
		}
		seen := map[[2]uint64]bool{}
		for _, w := range ws {
			if seen[[2]uint64{w.ID, uint64(w.Rank)}] {
				t.Fatalf("worker %d/%d twice", w.ID, w.Rank)
			}
			seen[[2]uint64{w.ID, uint64(w.Rank)}] = true
			ids, places := map[uint64]bool{}, map[[2]uint64]bool{}
			kids := make([]int, len(w.Nodes)+1)
			for k, n := range w.Nodes {
				switch {
				case n.Parent == 0 && n.Pos != 0:
					t.Fatalf("node %d: a root at %d", k, n.Pos)
				case n.Parent > uint32(k):
					t.Fatalf("node %d before its parent %d", k, n.Parent)
				case n.Parent != 0 && w.Nodes[n.Parent-1].Pos+1 != n.Pos:
					t.Fatalf("node %d not one past its parent", k)
				case n.Pos >= 1<<16:
					t.Fatalf("node %d past the maximum depth", k)
				case places[[2]uint64{uint64(n.Pos), n.Seq}]:
					t.Fatalf("node %d repeats a block", k)
				}
				places[[2]uint64{uint64(n.Pos), n.Seq}] = true
				kids[n.Parent]++
				for j, id := range n.IDs {
					if ids[id] {
						t.Fatalf("engine id %x twice", id)
					}
					ids[id] = true
					if tt := n.TiersOf(j); tt == 0 || tt>>3 != 0 {
						t.Fatalf("engine id %x in tiers %#x of 3", id, tt)
					}
				}
			}
			for k, n := range w.Nodes {
				if len(n.IDs) == 0 && kids[k+1] == 0 {
					t.Fatalf("node %d held by nothing and childless", k)
				}
			}
		}
		if binary.LittleEndian.Uint32(data[len(Magic):]) == Version && !bytes.Equal(encode(t, ws), data) {
			t.Fatalf("an accepted version-%d snapshot is not what Write writes for it", Version)
		}
	})
}

// Each engine id keeps its tiers; an id in no tier, or in a tier past the
// index's, is refused; a version-2 snapshot (no tiers) reads each id as
// held in the fastest tier.
func TestSnapshot_Tiers(t *testing.T) {
	all := sample()
	all[0].Nodes[2].Tiers = []uint8{0b010, 0b101}
	data := encode(t, all)
	got, err := Read(bytes.NewReader(data), 1<<20, 3)
	if err != nil {
		t.Fatal(err)
	}
	if n := got[0].Nodes[2]; n.TiersOf(0) != 0b010 || n.TiersOf(1) != 0b101 || got[1].Nodes[0].TiersOf(0) != 1 {
		t.Fatalf("tiers %v, %v", n.Tiers, got[1].Nodes[0].Tiers)
	}
	if _, err := Read(bytes.NewReader(data), 1<<20, 2); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("tier 2 in an index of two: %v, want ErrSnapshot", err)
	}
	all[0].Nodes[2].Tiers[0] = 0
	if _, err := Read(bytes.NewReader(encode(t, all)), 1<<20, 3); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("an id in no tier: %v, want ErrSnapshot", err)
	}
	// Version 2: the same layout without the tiers byte.
	var v2 []byte
	v2 = append(v2, Magic...)
	v2 = binary.LittleEndian.AppendUint32(v2, 2)
	v2 = binary.LittleEndian.AppendUint32(v2, 1)
	v2 = binary.LittleEndian.AppendUint64(v2, 7)  // id
	v2 = binary.LittleEndian.AppendUint32(v2, 0)  // rank
	v2 = binary.LittleEndian.AppendUint32(v2, 1)  // nodes
	v2 = binary.LittleEndian.AppendUint32(v2, 0)  // parent
	v2 = binary.LittleEndian.AppendUint32(v2, 0)  // pos
	v2 = binary.LittleEndian.AppendUint64(v2, 42) // seq
	v2 = binary.LittleEndian.AppendUint32(v2, 1)  // ids
	v2 = binary.LittleEndian.AppendUint64(v2, 99)
	got, err = Read(bytes.NewReader(sealed(v2)), 1<<20, 2)
	if err != nil || len(got) != 1 || got[0].Nodes[0].IDs[0] != 99 || got[0].Nodes[0].TiersOf(0) != 1 {
		t.Fatalf("version 2: %+v, %v", got, err)
	}
}
