package flash_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
	"github.com/flashindexer/flashindexer/flash/model"
)

// Memory counts what the index holds: shared entries, nodes (ghosts
// included) and engine ids, and bytes for each part at least what those
// counts take; one-word sets have no arena entries, nor do wide sets of
// workers in slots 0 to 62, and a wide set with a worker past them has one.
func TestFlash_MemoryParts(t *testing.T) {
	for _, workers := range []int{64, 256} {
		ix := flash.New(flash.WithWriters(0), flash.WithMaxWorkers(workers))
		p := flashtest.Seqs(1, 100)
		q := flashtest.Seqs(2, 50)
		_ = ix.Apply(p.StoreEvent(flash.Worker{ID: 1}, 0, 100, 0))
		_ = ix.Apply(p.StoreEvent(flash.Worker{ID: 2}, 0, 40, 0))
		_ = ix.Apply(q.StoreEvent(flash.Worker{ID: 2}, 0, 50, 0))
		// A removal in the middle leaves a ghost: worker 2 turns complex.
		_ = ix.Apply(flash.RemovedEvent(flash.Worker{ID: 2}, p.Hash(10, 0)))
		m := ix.Memory()
		if m.Keys != 150 || m.NodeCount != 190 || m.IDCount != 189 {
			t.Fatalf("workers %d: %d keys, %d nodes, %d ids; want 150, 190, 189", workers, m.Keys, m.NodeCount, m.IDCount)
		}
		if m.Tables < 16*m.Keys || m.Nodes < 32*m.NodeCount || m.IDs < 5*m.IDCount || m.Content < 13*m.NodeCount/2 {
			t.Fatalf("workers %d: parts smaller than their contents: %+v", workers, m)
		}
		if m.Entries != 0 {
			t.Fatalf("workers %d, in slots 0 and 1: %d bytes of arena entries", workers, m.Entries)
		}
		if m.Total() != m.Tables+m.Entries+m.Nodes+m.IDs+m.Content+m.Predictions {
			t.Fatalf("Total %d of %+v", m.Total(), m)
		}
		if workers > 64 {
			// Workers in slots 2 to 64 store p's first block: the last
			// moves its entry to the arena.
			for id := uint64(3); id <= 65; id++ {
				_ = ix.Apply(p.StoreEvent(flash.Worker{ID: id}, 0, 1, 0))
			}
			if m := ix.Memory(); m.Entries == 0 || m.Keys != 150 {
				t.Fatalf("workers %d, one entry with slot 64: %d keys, %d bytes of arena entries", workers, m.Keys, m.Entries)
			}
		}
		ix.Close()
	}
}

// A wide index's workers take their node chunks from their lane's slabs,
// which Memory counts whole, and give them back when they leave: with
// every worker removed, no node memory is left (a slab goes when none of
// its chunks is in use). Workers come and go by turns, so that slabs hold
// chunks of several.
func TestFlash_RemoveWorkerFreesNodes(t *testing.T) {
	ix := flash.New(flash.WithWriters(0), flash.WithMaxWorkers(256))
	defer ix.Close()
	r := rand.New(rand.NewPCG(5, 6))
	live := map[uint64]bool{}
	for round := range 6 {
		for k := range 40 {
			w := uint64(round*40 + k)
			p := flashtest.Seqs(uint64(1+r.IntN(8)), 40+r.IntN(400))
			for from := 0; from < len(p); from += 30 {
				if err := ix.Apply(p.StoreEvent(flash.Worker{ID: w}, from, min(from+30, len(p)), 0)); err != nil {
					t.Fatal(err)
				}
			}
			live[w] = true
		}
		for w := range live {
			if r.IntN(2) == 0 {
				if err := ix.RemoveWorker(w); err != nil {
					t.Fatal(err)
				}
				delete(live, w)
			}
		}
		if m := ix.Memory(); m.Nodes < 32*m.NodeCount || (m.NodeCount > 0) != (len(live) > 0) {
			t.Fatalf("round %d, %d workers: %d bytes of nodes for %d nodes", round, len(live), m.Nodes, m.NodeCount)
		}
	}
	for w := range live {
		if err := ix.RemoveWorker(w); err != nil {
			t.Fatal(err)
		}
	}
	if m := ix.Memory(); m.NodeCount != 0 || m.Nodes != 0 {
		t.Fatalf("every worker removed: %d bytes of nodes for %d nodes", m.Nodes, m.NodeCount)
	}
}

// A worker of a few blocks keeps a few nodes: its first chunk starts at 64
// nodes and doubles as it fills (was a whole chunk, 1,024 nodes, at once).
func TestFlash_SmallWorkerSmallNodes(t *testing.T) {
	ix := flash.New(flash.WithWriters(0), flash.WithMaxWorkers(64))
	defer ix.Close()
	p := flashtest.Seqs(3, 100)
	_ = ix.Apply(p.StoreEvent(flash.Worker{ID: 1}, 0, 10, 0))
	if m := ix.Memory(); m.Nodes != 64*32 {
		t.Fatalf("10 blocks: %d bytes of nodes, want %d", m.Nodes, 64*32)
	}
	_ = ix.Apply(p.StoreEvent(flash.Worker{ID: 1}, 10, 100, 0))
	if m := ix.Memory(); m.Nodes != 128*32 || m.NodeCount != 100 {
		t.Fatalf("100 blocks: %d bytes of nodes for %d nodes, want %d", m.Nodes, m.NodeCount, 128*32)
	}
}

// The room a hinted worker sets aside in the shared tables is counted in
// Tables, and what of it no table has taken yet in TableRoom: a declared
// worker's room before its first event, less once it fills, none without a
// hint.
func TestFlash_MemoryTableRoom(t *testing.T) {
	ix := flash.New(flash.WithWriters(0), flash.WithWorkerCapacity(1000), flash.WithReservedCapacity())
	defer ix.Close()
	if m := ix.Memory(); m.TableRoom != 0 {
		t.Fatalf("room with no worker: %+v", m)
	}
	w := flash.Worker{ID: 1}
	if err := ix.AddWorker(w); err != nil {
		t.Fatal(err)
	}
	declared := ix.Memory()
	if declared.TableRoom < 32*1000 || declared.Tables < declared.TableRoom {
		t.Fatalf("a worker declared for 1,000 blocks: %+v", declared)
	}
	p := flashtest.Seqs(1, 500)
	if err := ix.Apply(p.StoreEvent(w, 0, 500, 0)); err != nil {
		t.Fatal(err)
	}
	if m := ix.Memory(); m.TableRoom >= declared.TableRoom || m.Keys != 500 {
		t.Fatalf("after 500 blocks: %+v, declared %+v", m, declared)
	}
	plain := flash.New(flash.WithWriters(0))
	defer plain.Close()
	_ = plain.AddWorker(w)
	_ = plain.Apply(p.StoreEvent(w, 0, 500, 0))
	if m := plain.Memory(); m.TableRoom != 0 {
		t.Fatalf("room with no hint: %+v", m)
	}
}

// Blocks evicted by Removed events give their nodes back: a worker left
// holding under a quarter of the nodes it used moves them into chunks of
// their size (renaming them in its maps), and one left holding nothing
// keeps no more than Cleared leaves. Before, every chunk stayed: 64
// workers' node storage grew from 34.6 MB full to 47.6 MB empty. Every
// answer on the way is the model's (and under flash_invariants every
// worker is checked after every event).
func TestFlash_RemovedFreesNodes(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []flash.Option
	}{
		{"sync", []flash.Option{flash.WithWriters(0)}},
		{"writers=2/hinted", []flash.Option{flash.WithWriters(2), flash.WithWorkerCapacity(1000)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			workers := 8
			if testing.Short() {
				workers = 3 // each still past 4,096 nodes
			}
			ix := flash.New(c.opts...)
			defer ix.Close()
			ref := model.New(flash.DefaultConfig())
			apply := func(ev flash.Event) {
				if err := ix.Apply(ev); err != nil {
					t.Fatal(err)
				}
				if err := ref.Apply(ev); err != nil {
					t.Fatal(err)
				}
			}
			// Four chains of 5,000 blocks sharing their first 300, the
			// first one also under a second engine id on odd workers
			// (complex workers: content maps and lists of children).
			base, tail := flashtest.Seqs(1, 300), 4700
			var prompts []flashtest.Prompt
			for k := range 4 {
				prompts = append(prompts, flashtest.Concat(base, flashtest.Seqs(uint64(10+k), tail)))
			}
			var held [][2]int // (prompt, block) of every (worker, salt 0) block
			// hash[salt][k][i]: the engine id of prompt k's block i.
			var hash [2][][]flash.ExternalHash
			for salt := range hash {
				for _, p := range prompts {
					var hs []flash.ExternalHash
					for _, b := range p.Blocks(0, len(p), uint64(salt)) {
						hs = append(hs, b.Hash)
					}
					hash[salt] = append(hash[salt], hs)
				}
			}
			for w := range workers {
				for k, p := range prompts {
					from := 0
					if k > 0 {
						from = 300
					}
					apply(p.StoreEvent(flash.Worker{ID: uint64(w)}, from, len(p), 0))
				}
				if w%2 == 1 {
					apply(prompts[0].StoreEvent(flash.Worker{ID: uint64(w)}, 0, len(prompts[0]), 1))
				}
			}
			for k, p := range prompts {
				for i := range p {
					if k == 0 || i >= 300 {
						held = append(held, [2]int{k, i})
					}
				}
			}
			same := func(when string) {
				t.Helper()
				ix.Flush()
				var a, b flash.Scores
				for _, p := range prompts {
					for _, n := range []int{1, 299, 301, 900, len(p)} {
						q := flash.Query{Locals: p[:n]}
						ix.FindMatches(q, &a)
						ref.FindMatches(q, &b)
						a.Sort()
						b.Sort()
						if !slices.Equal(a.Matches, b.Matches) {
							t.Fatalf("%s: %d blocks of a prompt:\n got   %v\n model %v", when, n, a.Matches, b.Matches)
						}
					}
				}
				for w := range workers {
					if x, y := ix.BlockCount(flash.Worker{ID: uint64(w)}), ref.BlockCount(flash.Worker{ID: uint64(w)}); x != y {
						t.Fatalf("%s: worker %d holds %d blocks, model %d", when, w, x, y)
					}
				}
			}
			same("full")
			full := ix.Memory().Nodes
			// Evict 97% of every worker's blocks, 64 a Removed event, as
			// an engine's LRU does: deepest first (the chains' tails),
			// with one in ten from the middles of chains (ghosts).
			r := rand.New(rand.NewPCG(3, 4))
			for w := range workers {
				order := r.Perm(len(held))
				slices.SortStableFunc(order, func(x, y int) int { return held[y][1] - held[x][1] })
				var mid, rest []int
				for _, j := range order {
					if r.IntN(10) == 0 {
						mid = append(mid, j)
					} else {
						rest = append(rest, j)
					}
				}
				order = append(mid, rest...)
				order = order[:len(order)*97/100]
				for len(order) > 0 {
					n := min(64, len(order))
					hs := make([]flash.ExternalHash, 0, 2*n)
					for _, j := range order[:n] {
						k, i := held[j][0], held[j][1]
						hs = append(hs, hash[0][k][i])
						if k == 0 && w%2 == 1 {
							hs = append(hs, hash[1][k][i])
						}
					}
					order = order[n:]
					apply(flash.RemovedEvent(flash.Worker{ID: uint64(w)}, hs...))
					if len(order)%(64*64) == 0 {
						same(fmt.Sprintf("worker %d, %d blocks left to remove", w, len(order)))
					}
				}
			}
			same("3% held")
			// A worker that used under 4,096 nodes keeps them (as Cleared
			// does), so the compactions on the way down leave it some
			// 1,000 to 4,000 nodes of the 19,100 it had.
			m := ix.Memory()
			if m.Nodes*4 > full {
				t.Fatalf("3%% of the blocks held: %d bytes of nodes, %d full", m.Nodes, full)
			}
			t.Logf("nodes: %d bytes full, %d with 3%% of the blocks held", full, m.Nodes)
			// The rest: nothing held, as little kept as Cleared keeps.
			for w := range workers {
				var hs []flash.ExternalHash
				for _, h := range held {
					hs = append(hs, hash[0][h[0]][h[1]])
					if h[0] == 0 && w%2 == 1 {
						hs = append(hs, hash[1][h[0]][h[1]])
					}
				}
				_ = ix.Apply(flash.RemovedEvent(flash.Worker{ID: uint64(w)}, hs...))
				_ = ref.Apply(flash.RemovedEvent(flash.Worker{ID: uint64(w)}, hs...))
			}
			same("empty")
			if m := ix.Memory(); m.NodeCount != 0 || m.Nodes > workers*4096*32 {
				t.Fatalf("nothing held: %d nodes in %d bytes, %d full", m.NodeCount, m.Nodes, full)
			}
			// Stored again, everything answers as before.
			for w := range workers {
				apply(prompts[w%4].StoreEvent(flash.Worker{ID: uint64(w)}, 0, len(prompts[0]), 0))
			}
			same("stored again")
		})
	}
}

// FindMatches times one query in LatencySampleEvery into QueryLatency,
// whoever calls it, and counts every query's hit: the hit rate is one
// division of Stats.
func TestFlash_QueryLatencySampled(t *testing.T) {
	ix := flash.New(flash.WithWriters(0))
	defer ix.Close()
	p := flashtest.Seqs(1, 8)
	_ = ix.Apply(p.StoreEvent(flash.Worker{ID: 1}, 0, 4, 0))
	var sc flash.Scores
	const n = 10 * flash.LatencySampleEvery
	for i := range n {
		q := p
		if i%2 == 1 {
			q = flashtest.Seqs(2, 8) // matches nothing
		}
		ix.FindMatches(flash.Query{Locals: q}, &sc)
	}
	h := ix.QueryLatency()
	sum := uint64(0)
	for _, c := range h.Counts {
		sum += c
	}
	if h.Count != n/flash.LatencySampleEvery || sum != h.Count || h.Sum <= 0 || len(h.Counts) != len(h.Bounds)+1 {
		t.Fatalf("%d queries: %d sampled (buckets %v, sum %v), want %d", n, h.Count, h.Counts, h.Sum, n/flash.LatencySampleEvery)
	}
	s := ix.Stats()
	if s.Queries != n || s.QueryBlocks != 8*n || s.QueryHits != n/2 || s.QueryMatchedBlocks != 4*n/2 {
		t.Fatalf("queries %d, blocks %d, hits %d, matched blocks %d; want %d, %d, %d, %d", s.Queries, s.QueryBlocks, s.QueryHits, s.QueryMatchedBlocks, n, 8*n, n/2, 4*n/2)
	}
}

// A capacity hint alone makes nothing ahead: a fleet declared for far more
// blocks than it holds takes about the memory of one that is not declared
// (within 1.5×; the id maps grow 4× at a time up to the hint), and a hinted
// worker keeps its id map through a Cleared event, which an unhinted one
// of that size gives back. Made ahead (WithReservedCapacity), the same
// fleet takes its declared capacity's memory.
func TestFlash_CapacityHintMemoryFollowsBlocks(t *testing.T) {
	const workers, hint = 32, 100000
	fill := func(opts ...flash.Option) (flash.Memory, *flash.Indexer) {
		ix := flash.New(append([]flash.Option{flash.WithWriters(0), flash.WithMaxWorkers(64)}, opts...)...)
		for w := range workers {
			wk := flash.Worker{ID: uint64(w)}
			if err := ix.AddWorker(wk); err != nil {
				t.Fatal(err)
			}
			p := flashtest.Concat(flashtest.Seqs(1, 40), flashtest.Seqs(uint64(w)+10, 100+37*w))
			if err := ix.Apply(p.StoreEvent(wk, 0, len(p), 0)); err != nil {
				t.Fatal(err)
			}
		}
		return ix.Memory(), ix
	}
	plain, ix0 := fill()
	defer ix0.Close()
	hinted, ix1 := fill(flash.WithWorkerCapacity(hint))
	defer ix1.Close()
	reserved, ix2 := fill(flash.WithWorkerCapacity(hint), flash.WithReservedCapacity())
	defer ix2.Close()
	if hinted.Keys != plain.Keys || hinted.IDCount != plain.IDCount {
		t.Fatalf("hinted %+v, plain %+v: not the same content", hinted, plain)
	}
	if 2*hinted.Total() > 3*plain.Total() || hinted.TableRoom != 0 {
		t.Errorf("hinted fleet: %+v, unhinted %+v: past 1.5×", hinted, plain)
	}
	if reserved.Total() < workers*hint*32 {
		t.Errorf("a fleet made ahead for %d blocks a worker: %+v", hint, reserved)
	}
	// Cleared: the hinted worker keeps its id map, the plain one shrinks.
	big := flash.Worker{ID: workers - 1}
	idsAfterClear := func(ix *flash.Indexer) int {
		before := ix.Memory().IDs
		if err := ix.Apply(flash.ClearedEvent(big)); err != nil {
			t.Fatal(err)
		}
		return before - ix.Memory().IDs
	}
	if given := idsAfterClear(ix0); given <= 0 {
		t.Errorf("an unhinted worker of %d blocks kept its id map through Cleared", 140+37*(workers-1))
	}
	if given := idsAfterClear(ix1); given != 0 {
		t.Errorf("a hinted worker gave %d bytes of its id map back on Cleared", given)
	}
}
