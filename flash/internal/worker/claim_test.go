package worker

import (
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/flashindexer/flashindexer/flash/internal/entry"
	"github.com/flashindexer/flashindexer/internal/keyhash"
	"github.com/flashindexer/flashindexer/shardmap"
)

// claimAll, whose loop (claimRun's) takes the common claims and dups and
// leaves the others to claimID, decides what claiming each block in turn
// with claimID decides: the same answer, the same dups and their nodes,
// the same claims and count, and after a refusal no claim left. The
// batches mix dups, ids of other positions or content, new ids whose home
// bucket has another id of their tag first, the same id twice, and id 0;
// each outcome is seen at least 100 times.
func TestClaimAll_IsSequential(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	o := &Owner{W: entry.Writer{Sets: &entry.Sets{Inline: true}, Tabs: []shardmap.Writer{shardmap.New().SoleWriter()}, Excl: true}, K0: 1, K1: 3}
	ws := o.New(1, 0, 0)
	for range 40 {
		blocks := make([]Block, 1+r.IntN(30))
		for i := range blocks {
			blocks[i] = Block{Hash: r.Uint64() | 1, Local: r.Uint64()}
		}
		if err := o.Prepare(ws, 0, false, blocks, 1<<20); err != nil {
			t.Fatal(err)
		}
		o.Commit(ws)
	}
	ws.reserveIDs(64) // room for any batch: the table stays as it is
	var nodes []uint32
	atPos := map[uint32][]uint32{}
	ws.eachID(func(k uint64, ni uint32) {
		nodes = append(nodes, ni)
		atPos[ws.node(ni).pos] = append(atPos[ws.node(ni).pos], ni)
	})
	// Ids the worker lacks whose home bucket and tag are a held id's (the
	// twin of that id's node), some at each position.
	type twin struct {
		k  uint64
		of uint32
	}
	var twins []twin
	twinsAt := map[uint32][]twin{}
	for _, ni := range nodes[:300] {
		h := ws.idHash(ws.node(ni).ext)
		for {
			k := r.Uint64()
			if g := ws.idHash(k); g&ws.ids.bmask == h&ws.ids.bmask && idTag(g) == idTag(h) {
				twins = append(twins, twin{k, ni})
				twinsAt[ws.node(ni).pos] = append(twinsAt[ws.node(ni).pos], twin{k, ni})
				break
			}
		}
	}
	ids := func() map[uint64]uint32 {
		m := map[uint64]uint32{}
		ws.eachID(func(k uint64, v uint32) { m[k] = v })
		return m
	}
	held, n0, size := ids(), ws.ids.n, len(ws.ids.b)
	// run claims blocks with claim, then gives the claims back; it returns
	// claim's answer, the pending blocks and the ids while claimed.
	run := func(claim func([]Block, []pendingBlock, []keyhash.Key) bool, blocks []Block, keys []keyhash.Key) (bool, []pendingBlock, map[uint64]uint32, int) {
		pending := make([]pendingBlock, len(blocks))
		for i := range blocks {
			pending[i].idh = ws.idHash(blocks[i].Hash)
		}
		ws.batch = blocks
		ok := claim(blocks, pending, keys)
		got, n := ids(), ws.ids.n
		if ok {
			ws.unclaim(blocks, pending)
		}
		ws.batch = nil
		if after := ids(); ws.ids.n != n0 || !maps.Equal(after, held) || len(ws.ids.b) != size {
			t.Fatalf("after the batch (ok %v): %d ids, %d in the map (want %d), %d buckets (want %d)", ok, len(after), ws.ids.n, n0, len(ws.ids.b), size)
		}
		return ok, pending, got, n
	}
	inTurn := func(blocks []Block, pending []pendingBlock, keys []keyhash.Key) bool {
		for i := range blocks {
			p := &pending[i]
			slot, v, found := ws.claimID(blocks[i].Hash, p.idh, i)
			p.slot, p.held = slot, 0
			if !found {
				continue
			}
			ni := ws.idNode(v)
			if p.held = ni + 1; v&idClaim != 0 || ws.node(ni).pos != uint32(i) || ws.node(ni).seq != keys[i].K {
				ws.unclaim(blocks[:i], pending[:i])
				return false
			}
		}
		return true
	}
	all := func(blocks []Block, pending []pendingBlock, keys []keyhash.Key) bool {
		return ws.claimAll(blocks, pending, keys, 0)
	}
	var refused, stored, dups, twinned int
	for trial := range 2000 {
		blocks := make([]Block, 1+r.IntN(30))
		keys := make([]keyhash.Key, len(blocks))
		odd := r.IntN(3) == 0 // a batch with ids that may refuse it
		for i := range blocks {
			blocks[i].Hash, keys[i].K = r.Uint64()|1, r.Uint64()
			switch c := atPos[uint32(i)]; r.IntN(8) {
			case 0, 1, 2:
				if len(c) > 0 {
					nd := ws.node(c[r.IntN(len(c))])
					blocks[i].Hash, keys[i].K = nd.ext, nd.seq
					if odd && r.IntN(8) == 0 {
						keys[i].K++ // its id, at its position, for other content
					}
				}
			case 3, 4:
				blocks[i].Hash = twins[r.IntN(len(twins))].k
				if tw := twinsAt[uint32(i)]; len(tw) > 0 && r.IntN(2) == 0 {
					// Its twin's node's position and content.
					x := tw[r.IntN(len(tw))]
					blocks[i].Hash, keys[i].K = x.k, ws.node(x.of).seq
				}
			case 5:
				if odd {
					nd := ws.node(nodes[r.IntN(len(nodes))])
					blocks[i].Hash = nd.ext // another content's, or position's
					if r.IntN(2) == 0 {
						keys[i].K = nd.seq
					}
				}
			case 6:
				if odd && i > 0 {
					blocks[i].Hash = blocks[r.IntN(i)].Hash
				} else if odd && r.IntN(4) == 0 {
					blocks[i].Hash = 0
				}
			}
		}
		for i := range blocks {
			if h := ws.idHash(blocks[i].Hash); blocks[i].Hash != 0 {
				bk := &ws.ids.b[h&ws.ids.bmask]
				if j := bk.firstOf(idTag(h)); j < idBucketSlots && bk.vals[j]&(idAlias|idClaim) == 0 && ws.node(bk.vals[j]).ext != blocks[i].Hash {
					twinned++
				}
			}
		}
		want, wp, wids, wn := run(inTurn, blocks, keys)
		got, gp, gids, gn := run(all, blocks, keys)
		if got != want {
			t.Fatalf("trial %d: claimAll %v, in turn %v", trial, got, want)
		}
		if !got {
			refused++
			continue
		}
		stored++
		if gn != wn || !maps.Equal(gids, wids) {
			t.Fatalf("trial %d: %d ids claimed (%d in the map), in turn %d (%d)", trial, len(gids), gn, len(wids), wn)
		}
		for i := range blocks {
			if gp[i].held != wp[i].held {
				t.Fatalf("trial %d: block %d dup %v node+1 %d, in turn %v %d", trial, i, gp[i].dup(), gp[i].held, wp[i].dup(), wp[i].held)
			}
			if gp[i].dup() {
				dups++
			} else if gids[blocks[i].Hash] != idClaim|uint32(i) {
				t.Fatalf("trial %d: block %d's claim is %x", trial, i, gids[blocks[i].Hash])
			}
		}
	}
	if refused < 100 || stored < 100 || dups < 100 || twinned < 100 {
		t.Fatalf("%d batches refused, %d claimed, %d dups, %d blocks with another id's tag first: too few", refused, stored, dups, twinned)
	}
	t.Logf("%d batches refused, %d claimed, %d dups, %d blocks with another id's tag first", refused, stored, dups, twinned)
}
