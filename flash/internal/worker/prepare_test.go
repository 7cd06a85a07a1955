package worker

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/chain"
	"github.com/flashindexer/flashindexer/internal/keyhash"
	"github.com/flashindexer/flashindexer/shardmap"
)

// prepKeys gives each block its engine id's hash as idHash does, and the
// table key of its sequence hash as the chain block by block and Map.Key
// give it: batches at position 0 (the first block's hash its local hash)
// and under a parent, of 0 to 70 blocks, with prefetches and without,
// under a secret and the degenerate one; it writes nothing past the
// batch, and its loops (assembly on amd64) write what prepKeysGo does.
func TestPrepKeys(t *testing.T) { checkPrepKeys(t, 41, 1500) }

// FuzzPrepKeys holds prepKeys (assembly on amd64) to prepKeysGo, its twin,
// over batches drawn from the seed.
func FuzzPrepKeys(f *testing.F) {
	f.Add(uint64(41))
	f.Fuzz(func(t *testing.T, seed uint64) { checkPrepKeys(t, seed, 10) })
}

func checkPrepKeys(t *testing.T, seed uint64, steps int) {
	r := rand.New(rand.NewPCG(seed, seed+1))
	m := shardmap.New()
	for _, degenerate := range []bool{false, true} {
		ws := &State{k0: r.Uint64(), k1: r.Uint64() | 1}
		if degenerate {
			ws.k1 = 0
		}
		ws.ids.alloc(idBuckets(500))
		idKr, seqKr := keyhash.New(ws.k0, ws.k1), m.SoleWriter().Keyer()
		base := unsafe.Pointer(unsafe.SliceData(ws.ids.b))
		for step := range steps {
			blocks := make([]Block, r.IntN(71))
			for i := range blocks {
				blocks[i] = Block{Hash: r.Uint64() >> r.IntN(64), Local: r.Uint64()}
			}
			keys, pending := make([]keyhash.Key, 71), make([]pendingBlock, 71)
			for i := range keys {
				keys[i], pending[i] = keyhash.Key{K: 1, H: 1}, pendingBlock{idh: 1, held: 1, slot: 1}
			}
			goKeys, goPending := slices.Clone(keys), slices.Clone(pending)
			root, prev, prefetch := r.IntN(2) == 0, r.Uint64(), r.IntN(2) == 0
			if degenerate {
				// Prepare's loops for such a secret (prepKeys takes odd ones).
				prepKeysGo(keys, pending, blocks, prev, root, idKr, seqKr, base, ws.ids.bmask, prefetch)
			} else {
				prepKeys(keys, pending, blocks, prev, root, idKr, seqKr, base, ws.ids.bmask, prefetch)
			}
			prepKeysGo(goKeys, goPending, blocks, prev, root, idKr, seqKr, base, ws.ids.bmask, prefetch)
			if !slices.Equal(keys, goKeys) || !slices.Equal(pending, goPending) {
				t.Fatalf("step %d: prepKeys and prepKeysGo differ", step)
			}
			for i, b := range blocks {
				seq := chain.Chain(prev, b.Local)
				if i == 0 && root {
					seq = b.Local
				}
				prev = seq
				if keys[i] != m.SoleWriter().Key(seq) {
					t.Fatalf("step %d (root %v): block %d: key %+v, want %+v", step, root, i, keys[i], m.SoleWriter().Key(seq))
				}
				if want := (pendingBlock{idh: ws.idHash(b.Hash), held: 1, slot: 1}); pending[i] != want {
					t.Fatalf("step %d: block %d: pending %+v, want %+v", step, i, pending[i], want)
				}
			}
			for i := len(blocks); i < len(keys); i++ {
				if keys[i] != (keyhash.Key{K: 1, H: 1}) || pending[i] != (pendingBlock{idh: 1, held: 1, slot: 1}) {
					t.Fatalf("step %d: block %d of %d written", step, i, len(blocks))
				}
			}
		}
	}
}

// prefetchNodes asks for the nodes freshNodes would take next (peekFresh):
// the next n of the current chunk that exist, none when a freed node comes
// first or no chunk is made; at the first node, mid-chunk, at a chunk's
// last node and past it, and past the last chunk. It takes none.
func TestPeekFresh(t *testing.T) {
	const c = 1 << nodeChunkBits
	ws := &State{}
	ws.chunks = []*chunk{new(chunk), new(chunk)}
	for _, tc := range []struct {
		n, freed uint32
		k        int
		want     []node // nil: none
	}{
		{0, 0, 3, ws.chunks[0][:3]},
		{7, 0, 1000, ws.chunks[0][7:]},
		{c - 1, 0, 63, ws.chunks[0][c-1:]},
		{c, 0, 63, ws.chunks[1][:min(c, 63)]},
		{c + 3, 0, 1, ws.chunks[1][3:4]},
		{2 * c, 0, 2, nil},
		{3 * c, 0, 2, nil},
		{7, 1, 4, nil},
		{7, 0, 0, ws.chunks[0][7:7]},
	} {
		ws.n, ws.freed = tc.n, tc.freed
		got := ws.peekFresh(tc.k)
		if len(got) != len(tc.want) || len(got) > 0 && &got[0] != &tc.want[0] {
			t.Fatalf("n %d, freed %d: peekFresh(%d) = %d nodes, want %d (or other nodes)", tc.n, tc.freed, tc.k, len(got), len(tc.want))
		}
		ws.prefetchNodes(tc.k)
		if ws.n != tc.n || ws.freed != tc.freed {
			t.Fatalf("n %d, freed %d: prefetchNodes took nodes (%d, %d)", tc.n, tc.freed, ws.n, ws.freed)
		}
	}
}

// claimRun (assembly on amd64) does what claimRunGo does, whatever the
// table holds: the same stop, dups, table and pending blocks. Each claim
// names its block; each dup names a node whose own id, position and
// content are the block's; and a stop is at id 0, at a block whose tag's
// first slot in its home bucket is not such a dup, at an overflowed bucket
// or at a full one, each of them seen at least 100 times.
func TestClaimRun_IsGo(t *testing.T) {
	stops, claims, dups := checkClaimRun(t, 45, 200)
	for why, n := range stops {
		if n < 100 {
			t.Fatalf("%d stops for reason %d (of %v), %d claims: too few to test it", n, why, stops, claims)
		}
	}
	if dups < 100 {
		t.Fatalf("%d dups, %d claims: too few to test them", dups, claims)
	}
	t.Logf("%d claims, %d dups; stops at id 0, a tag, an overflow, a full bucket: %v", claims, dups, stops)
}

// FuzzClaimRun holds claimRun (assembly on amd64) to claimRunGo, its
// twin, over tables and batches drawn from the seed.
func FuzzClaimRun(f *testing.F) {
	f.Add(uint64(45))
	f.Fuzz(func(t *testing.T, seed uint64) { checkClaimRun(t, seed, 2) })
}

// checkClaimRun runs claimRun and claimRunGo over rounds of tables, and
// returns how often each kind of stop came, the claims and the dups.
func checkClaimRun(t *testing.T, seed uint64, rounds int) (stops [4]int, claims, dups int) {
	r := rand.New(rand.NewPCG(seed, seed+1))
	ws := &State{k0: r.Uint64(), k1: r.Uint64() | 1}
	const nodes = 2 << nodeChunkBits
	ws.chunks = []*chunk{new(chunk), new(chunk)}
	m := &ws.ids
	// stops: at id 0, a tag, an overflow, a full bucket
	// isDup reports whether block i would be a dup of the first slot of
	// its tag in its home bucket, as claimRun takes one.
	isDup := func(blocks []Block, pending []pendingBlock, keys []keyhash.Key, pos, i int) bool {
		bk := &m.b[pending[i].idh&m.bmask]
		j := bk.firstOf(idTag(pending[i].idh))
		if j >= idBucketSlots || bk.vals[j]&(idAlias|idClaim) != 0 {
			return false
		}
		n := ws.node(bk.vals[j])
		return n.ext == blocks[i].Hash && n.pos == uint32(pos+i) && n.seq == keys[i].K
	}
	for round := range rounds {
		m.alloc(16)
		for _, c := range ws.chunks {
			for k := range c {
				c[k] = node{seq: r.Uint64(), ext: r.Uint64() | 1, pos: r.Uint32()}
			}
		}
		type held struct {
			h uint64
			s int
			v uint32
		}
		var in []held
		for range r.IntN(16 * idBucketSlots) { // never full: idInsert needs a free slot
			h, v := r.Uint64(), uint32(r.IntN(nodes))
			switch r.IntN(8) {
			case 0:
				v |= idAlias
			case 1:
				v |= idClaim
			}
			in = append(in, held{h, ws.idInsert(h, v), v})
		}
		live := in[:0]
		for _, x := range in {
			if r.IntN(4) == 0 {
				ws.idDelete(x.h, x.s)
			} else {
				live = append(live, x)
			}
		}
		for step := range 50 {
			blocks := make([]Block, r.IntN(41))
			pending := make([]pendingBlock, len(blocks))
			keys := make([]keyhash.Key, len(blocks))
			pos := r.IntN(1 << 20)
			for i := range blocks {
				blocks[i].Hash = r.Uint64() | 1
				if r.IntN(30) == 0 {
					blocks[i].Hash = 0
				}
				keys[i] = keyhash.Key{K: r.Uint64(), H: r.Uint64()}
				h := r.Uint64()
				if len(live) > 0 && r.IntN(3) == 0 {
					// An id the worker holds: a dup, or one that names
					// other content (or is not the node's own id).
					x := live[r.IntN(len(live))]
					h = x.h
					if x.v&(idAlias|idClaim) == 0 {
						n := ws.node(x.v)
						blocks[i].Hash, n.pos, keys[i].K = n.ext, uint32(pos+i), n.seq
						switch r.IntN(8) {
						case 0:
							blocks[i].Hash++
						case 1:
							n.pos++
						case 2:
							keys[i].K++
						}
					}
				} else if bk := &m.b[h&m.bmask]; r.IntN(3) == 0 && bk.lo() != 0 {
					// A tag that its home bucket has.
					j := r.IntN(idBucketSlots)
					for bk.tag(j) == 0 {
						j = (j + 1) % idBucketSlots
					}
					h = h&^(0xff<<56) | uint64(bk.tag(j))<<56
				}
				pending[i] = pendingBlock{idh: h, slot: idSlot(r.Uint32()), held: r.Uint32() * uint32(r.IntN(2))}
			}
			from := r.IntN(len(blocks) + 1)
			goB, goP := slices.Clone(m.b), slices.Clone(pending)
			want, wantDups := claimRunGo(unsafe.Pointer(unsafe.SliceData(goB)), m.bmask, blocks, goP, keys, ws.chunks, pos, from)
			got, gotDups := claimRun(unsafe.Pointer(unsafe.SliceData(m.b)), m.bmask, blocks, pending, keys, ws.chunks, pos, from)
			if got != want || gotDups != wantDups || !slices.Equal(m.b, goB) || !slices.Equal(pending, goP) {
				t.Fatalf("round %d step %d: claimRun from %d of %d = %d, %d dups; claimRunGo %d, %d (tables alike: %v, pending alike: %v)",
					round, step, from, len(blocks), got, gotDups, want, wantDups, slices.Equal(m.b, goB), slices.Equal(pending, goP))
			}
			n := 0
			for i := from; i < got; i++ {
				p := pending[i]
				if p.dup() {
					n++
					ni := p.held - 1
					if nd := ws.node(ni); *m.word(p.slot) != ni || nd.ext != blocks[i].Hash || nd.pos != uint32(pos+i) || nd.seq != keys[i].K {
						t.Fatalf("round %d step %d: block %d's dup %d (slot %x holds %x) is not its content", round, step, i, ni, p.slot, *m.word(p.slot))
					}
				} else if *m.word(p.slot) != idClaim|uint32(i) {
					t.Fatalf("round %d step %d: block %d's slot %x holds %x", round, step, i, p.slot, *m.word(p.slot))
				}
			}
			if n != gotDups {
				t.Fatalf("round %d step %d: %d dups counted, %d marked", round, step, gotDups, n)
			}
			claims += got - from - n
			dups += n
			if got < len(blocks) {
				bk := &m.b[pending[got].idh&m.bmask]
				switch {
				case blocks[got].Hash == 0:
					stops[0]++
				case bk.has(idTag(pending[got].idh)):
					if isDup(blocks, pending, keys, pos, got) {
						t.Fatalf("round %d step %d: claimRun stopped at block %d, a dup", round, step, got)
					}
					stops[1]++
				case bk.over != 0:
					stops[2]++
				case bk.firstFree() == idBucketSlots:
					stops[3]++
				default:
					t.Fatalf("round %d step %d: claimRun stopped at block %d, which it could claim", round, step, got)
				}
			}
		}
	}
	return stops, claims, dups
}

// freshLoop writes the nodes, and each claim's word (id 0's too), from
// runs of 1 to 40 blocks; each node as its comment has it.
func TestFreshLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	var m idMap
	m.alloc(16)
	for step := range 3000 {
		n := 1 + r.IntN(40)
		ns := make([]node, n)
		keys := make([]keyhash.Key, n)
		blocks := make([]Block, n)
		pending := make([]pendingBlock, n)
		for k, s := range r.Perm(16 * idBucketSlots)[:n] {
			keys[k] = keyhash.Key{K: r.Uint64(), H: r.Uint64()}
			blocks[k] = Block{Hash: r.Uint64(), Local: r.Uint64()}
			pending[k] = pendingBlock{idh: r.Uint64(), slot: slotWord(s/idBucketSlots<<idSlotBits | s%idBucketSlots)}
		}
		if r.IntN(3) == 0 {
			pending[r.IntN(n)].slot = idZSlot
		}
		for k := range ns {
			ns[k] = node{seq: r.Uint64(), st: r.Uint32()} // stale
		}
		pos, ni, parent := r.Uint32()>>1, r.Uint32()>>3, r.Uint32()
		freshLoop(unsafe.Pointer(unsafe.SliceData(m.b)), &m.zv, ns, keys, blocks, pending, pos, ni, parent)
		for k, nd := range ns {
			want := node{seq: keys[k].K, ext: blocks[k].Hash, pos: pos + uint32(k), parent: ni + uint32(k), kids: freshKids, st: freshSt}
			if k == 0 {
				want.parent = parent
			}
			if nd != want || *m.word(pending[k].slot) != ni+uint32(k) {
				t.Fatalf("step %d: node %d = %+v, want %+v; its id's word %d", step, k, nd, want, *m.word(pending[k].slot))
			}
		}
	}
}
