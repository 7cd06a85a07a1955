package worker

import (
	"maps"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// A worker's id map against a Go map, through what the write path does:
// batches of claims (some given back, as a rejected batch's are), ids set
// as a node's own or as aliases, removals, id 0, growth and shrinking; in a
// well-spread and in a degenerate (one cluster) hash.
func TestIDMap_RandomOps(t *testing.T) {
	for _, degenerate := range []bool{false, true} {
		r := rand.New(rand.NewPCG(11, 12))
		ws := &State{k0: r.Uint64(), k1: r.Uint64() | 1}
		if degenerate {
			ws.k1 = 0
		}
		ws.ids.floor = idBuckets(0)
		ws.ids.alloc(ws.ids.floor)
		ref := map[uint64]uint32{}
		var nodes []uint32   // live nodes
		claims, home := 0, 0 // new ids, and those in the line idAddr names
		for step := 0; step < 4000; step++ {
			switch op := r.IntN(10); {
			case op < 5: // a batch
				n := 1 + r.IntN(60)
				ws.reserveIDs(n)
				batch := make([]Block, n)
				for i := range batch {
					batch[i].Hash = uint64(r.Uint64() >> r.IntN(64)) // 0 too
				}
				ws.batch = batch
				var slots []*uint32 // the words the claims' slots name
				var fresh []int
				for i, b := range batch {
					slot, v, found := ws.claimID(b.Hash, ws.idHash(b.Hash), i)
					want, in := ref[b.Hash]
					claimed := false
					for _, j := range fresh {
						claimed = claimed || batch[j].Hash == b.Hash
					}
					switch {
					case claimed:
						if !found || v&idClaim == 0 {
							t.Fatalf("step %d: a repeat in the batch: %x %v", step, v, found)
						}
					case in:
						if !found || ws.idNode(v) != want {
							t.Fatalf("step %d: claim of a held id: node %d %v, want %d", step, ws.idNode(v), found, want)
						}
					case found:
						t.Fatalf("step %d: claim finds an id never set", step)
					default:
						slots, fresh = append(slots, ws.ids.word(slot)), append(fresh, i)
						// Prepare prefetches the line at idAddr for it.
						claims++
						if a, line := uintptr(unsafe.Pointer(ws.ids.word(slot))), ws.idAddr(ws.idHash(b.Hash)); a >= line && a < line+64 {
							home++
						}
					}
				}
				if r.IntN(4) == 0 {
					for _, i := range fresh {
						if _, ok := ws.dropID(batch[i].Hash); !ok {
							t.Fatalf("step %d: a claim could not be given back", step)
						}
					}
				} else {
					for k, i := range fresh {
						var ni uint32
						if len(nodes) > 0 && r.IntN(3) == 0 {
							ni = nodes[r.IntN(len(nodes))]
						} else {
							ni = ws.newNode(node{pos: uint32(step)})
							nodes = append(nodes, ni)
						}
						ws.setID(slots[k], batch[i].Hash, ni)
						ws.node(ni).st++
						ref[batch[i].Hash] = ni
					}
				}
				ws.batch = nil
			case op < 9: // removals
				// Ids picked by the seeded source, not by the map's
				// order: the run, and the share of claims in their home
				// line that it checks, are the same every time.
				held := slices.Sorted(maps.Keys(ref))
				for range min(r.IntN(40), len(held)) {
					j := r.IntN(len(held))
					k := held[j]
					held = slices.Delete(held, j, j+1)
					ni, ok := ws.dropID(k)
					if !ok || ni != ref[k] {
						t.Fatalf("step %d: dropID(%x) = %d %v, want %d", step, k, ni, ok, ref[k])
					}
					ws.node(ni).st--
					delete(ref, k)
				}
			default:
				if _, ok := ws.dropID(uint64(r.Uint64())); ok {
					t.Fatalf("step %d: dropped an id never set", step)
				}
			}
			if ws.ids.n != len(ref) || ws.ids.n > len(ws.ids.b)*idBucketFill {
				t.Fatalf("step %d: %d ids in %d buckets, want %d", step, ws.ids.n, len(ws.ids.b), len(ref))
			}
			if step%200 == 0 {
				seen := 0
				ws.eachID(func(k uint64, ni uint32) {
					seen++
					if ref[k] != ni {
						t.Fatalf("step %d: eachID gives %x → %d, want %d", step, k, ni, ref[k])
					}
				})
				for k, want := range ref {
					if got, ok := ws.getID(k); !ok || got != want {
						t.Fatalf("step %d: getID(%x) = %d %v, want %d", step, k, got, ok, want)
					}
				}
				if seen != len(ref) {
					t.Fatalf("step %d: eachID gives %d ids, want %d", step, seen, len(ref))
				}
			}
		}
		if !degenerate && home < claims*9/10 {
			t.Fatalf("%d of %d new ids in the line idAddr names", home, claims)
		}
	}
}

// match and has against a loop over the tags, for every tag value a
// bucket can hold (0 for free slots, 1…255 for ids), and tag against setTag.
func TestIDMap_MatchTags(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		var bk idBucket
		var tags [idBucketSlots]uint8
		for j := range tags {
			tags[j] = uint8(r.IntN(256))
			switch r.IntN(4) {
			case 0, 1:
				tags[j] = tags[r.IntN(j+1)] // repeats
			case 2:
				// Free slots, and the bytes whose tests borrow or carry.
				tags[j] = []uint8{0, 0, 1, 0x7F, 0x80, 0x81, 0xFF}[r.IntN(7)]
			}
		}
		bk.over = uint8(r.IntN(256))
		for _, j := range r.Perm(idBucketSlots) {
			bk.setTag(j, uint8(r.IntN(256))) // overwritten below
		}
		for _, j := range r.Perm(idBucketSlots) {
			bk.setTag(j, tags[j])
		}
		for j, x := range tags {
			if got := bk.tag(j); got != x {
				t.Fatalf("tags %v: slot %d has %d", tags, j, got)
			}
		}
		for _, tag := range append(tags[:], uint8(r.IntN(256))) {
			var want uint32
			for j, x := range tags {
				if x == tag {
					want |= 1 << j
				}
			}
			set := bk.match(tag)
			if tag == 0 {
				first := idBucketSlots
				if want != 0 {
					first = bits.TrailingZeros32(want)
				}
				if got := bk.firstFree(); got != first {
					t.Fatalf("tags %v: first free slot %d, want %d", tags, got, first)
				}
			}
			// Slots 0–7 are bits 8j, slots 8–11 bits 8j+1; no other bit.
			if stray := set &^ (0x0101_0101_0101_0101 | 0x0202_0202); stray != 0 {
				t.Fatalf("tags %v, tag %d: set %#x has bits %#x that name no slot", tags, tag, set, stray)
			}
			var got uint32
			for c := set; c != 0; c &= c - 1 {
				got |= 1 << slotOf(c)
			}
			if got != want {
				t.Fatalf("tags %v, tag %d: %012b, want %012b", tags, tag, got, want)
			}
			if tag != 0 && bk.has(tag) != (want != 0) {
				t.Fatalf("tags %v: has(%d) = %v, want %v", tags, tag, bk.has(tag), want != 0)
			}
		}
	}
}

// An id's tag is its hash's top byte, 0 taken as 1: 255 values, so a probe
// for a new id reads a node for a false match at half contentMap's rate.
func TestIDMap_TagIsTheTopByte(t *testing.T) {
	seen := map[uint8]bool{}
	for b := range 256 {
		h := uint64(b)<<56 | 0x00AB_CDEF_0123_4567
		want := uint8(b)
		if b == 0 {
			want = 1
		}
		if got := idTag(h); got != want {
			t.Fatalf("idTag(%#x) = %d, want %d", h, got, want)
		}
		seen[idTag(h)] = true
	}
	if len(seen) != 255 || seen[0] {
		t.Fatalf("%d tag values (0 among them: %v), want 255 nonzero", len(seen), seen[0])
	}
}

// idPlace, which idGrow uses, puts every id where idInsert would: two
// tables filled with the same hashes (many sharing a home, so buckets fill
// and overflow, tags 0 and 255 among them) end up alike, slot for slot;
// and a bucket that has had only inserts counts its slots as free does.
func TestIDMap_PlaceIsInsert(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for round := range 200 {
		c := 1 << r.IntN(6)
		var a, b State
		a.ids.alloc(c)
		b.ids.alloc(c)
		n := r.IntN(c*idBucketFill + 1)
		for i := range n {
			h := r.Uint64()
			switch r.IntN(4) {
			case 0:
				h &= 3 // a few homes, tag 1
			case 1:
				h |= 0xFF << 56
			}
			a.idInsert(h, uint32(i))
			b.idPlace(h, uint32(i))
		}
		for k := range a.ids.b {
			if a.ids.b[k] != b.ids.b[k] {
				t.Fatalf("round %d: bucket %d: insert %+v, place %+v", round, k, a.ids.b[k], b.ids.b[k])
			}
			bk := &b.ids.b[k]
			want := idBucketSlots
			want = bk.firstFree()
			if got := bk.filled(); got != want {
				t.Fatalf("round %d: bucket %d: filled %d, free says %d", round, k, got, want)
			}
		}
	}
}

// A map that shrinks as an id is dropped forgets that id: the smaller
// table is built from the nodes and aliases, which must no longer name it.
// Ids of nodes and aliases alike, 3,000 of them, all dropped in order
// through the table's shrinks.
func TestIDMap_ShrinkForgetsTheDroppedID(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	ws := &State{k0: r.Uint64(), k1: r.Uint64() | 1}
	ws.ids.floor = idBuckets(0)
	ws.ids.alloc(ws.ids.floor)
	put := func(k uint64, ni uint32) {
		ws.reserveIDs(1)
		ws.batch = []Block{{Hash: k}}
		slot, _, found := ws.claimID(k, ws.idHash(k), 0)
		if found {
			t.Fatalf("id %x found before it was set", k)
		}
		ws.setID(ws.ids.word(slot), k, ni)
		ws.node(ni).st++
		ws.batch = nil
	}
	var ids []uint64
	var nodes []uint32
	for i := range 3000 {
		k := r.Uint64() | 1
		if i%3 == 2 {
			put(k, nodes[r.IntN(len(nodes))]) // an alias of an earlier node
		} else {
			nodes = append(nodes, ws.newNode(node{pos: uint32(i)}))
			put(k, nodes[len(nodes)-1])
		}
		ids = append(ids, k)
	}
	most, shrinks := len(ws.ids.b), 0
	for d, k := range ids {
		before := len(ws.ids.b)
		if _, ok := ws.dropID(k); !ok {
			t.Fatalf("dropID(%x): not found", k)
		}
		if len(ws.ids.b) < before {
			shrinks++
		}
		if _, ok := ws.getID(k); ok {
			t.Fatalf("drop %d (table %d → %d buckets): id %x still found", d, before, len(ws.ids.b), k)
		}
		if len(ws.ids.b) < before || d == len(ids)-1 {
			seen := 0
			ws.eachID(func(uint64, uint32) { seen++ })
			if left := len(ids) - d - 1; seen != left || ws.ids.n != left {
				t.Fatalf("drop %d: the map lists %d ids and counts %d, want %d", d, seen, ws.ids.n, left)
			}
		}
	}
	if shrinks == 0 || len(ws.ids.b) >= most {
		t.Fatalf("the table never shrank (%d buckets, %d at most)", len(ws.ids.b), most)
	}
}
