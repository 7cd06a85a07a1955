package worker

// A worker's nodes are named by index (in its id map, its aliases, its
// content map, its nodes' parents and its lists of children), so freed
// nodes go on a free list and their chunks stay. When a worker's Removed
// events leave few of its nodes in use, compact moves them to the front of
// new chunks of their size and renames every reference, so that its memory
// follows what it holds, as Cleared's and RemoveWorker's does.

// compactFloor: workers that have used up to 4,096 nodes (128 KiB) keep
// them, as Clear does.
const compactFloor = 4096

// compactBelow: a worker compacts once under a quarter of the nodes it has
// used are live. Churn that frees and reuses nodes at a steady count never
// gets there, and after a compaction the live nodes must fall to a quarter
// again before the next: each compaction's cost (a pass over the nodes and
// the id map) is paid for by the removals that came before it.
const compactBelow = 4

// compactIfSparse compacts ws (or, holding nothing, clears it) when it has
// used more nodes than compactFloor and its capacity hint keep, and under
// 1/compactBelow of them are live. Remove calls it after each event.
func (o *Owner) compactIfSparse(ws *State) {
	live := ws.n - ws.nfree
	if ws.n <= max(compactFloor, uint32(ws.hintChunks)<<nodeChunkBits) || live*compactBelow >= ws.n {
		return
	}
	if live == 0 {
		o.Clear(ws) // nothing is attached: Clear only resets
		return
	}
	if o.tiered() {
		return // its tier words are by node (tiers.go)
	}
	o.compact(ws)
}

// compact renumbers ws's live nodes 0 to live-1, in their order, into new
// chunks (at least the hint's), and renames every reference to them.
func (o *Owner) compact(ws *State) {
	live := ws.n - ws.nfree
	renum := make([]uint32, ws.n) // old index → new index + 1; 0: free
	j := uint32(0)
	for i := uint32(0); i < ws.n; i++ {
		if ws.node(i).live() {
			j++
			renum[i] = j
		}
	}
	// The new chunks (at least the hint's), in one allocation, or from
	// the lane's pool.
	nch := max(int(live+1<<nodeChunkBits-1)>>nodeChunkBits, ws.hintChunks, 1)
	var fresh []*chunk
	if ws.pool != nil && ws.hintChunks == 0 {
		fresh = make([]*chunk, nch)
		for k := range fresh {
			fresh[k] = ws.pool.get()
		}
	} else {
		fresh, _ = appendChunks(make([]*chunk, 0, nch), nch)
	}
	for i := uint32(0); i < ws.n; i++ {
		if k := renum[i]; k != 0 {
			n := *ws.node(i)
			if n.parent != 0 {
				n.parent = renum[n.parent-1]
			}
			fresh[(k-1)>>nodeChunkBits][(k-1)&(1<<nodeChunkBits-1)] = n
		}
	}
	ws.putChunks(ws.chunks)
	clear(ws.chunks) // the old ones, for the collector
	if len(fresh) <= len(ws.chunkArr) {
		ws.chunks = ws.chunkArr[:copy(ws.chunkArr[:], fresh)]
	} else {
		ws.chunks = fresh
	}
	ws.n, ws.freed, ws.nfree = live, 0, 0
	// The id map's values and the aliases name nodes by index.
	rename := func(v *uint32) {
		if *v&(idAlias|idClaim) == 0 {
			*v = renum[*v] - 1
		}
	}
	m := &ws.ids
	if m.hasZ {
		rename(&m.zv)
	}
	for b := range m.b {
		bk := &m.b[b]
		for s := range idBucketSlots {
			if bk.tag(s) != 0 {
				rename(&bk.vals[s])
			}
		}
	}
	for a := range ws.aliases {
		if n := ws.aliases[a].node; n != freeAlias {
			ws.aliases[a].node = renum[n] - 1
		}
	}
	// A complex worker's content map and lists of children are made
	// again from the renamed nodes.
	if ws.complex {
		ws.complex, ws.content, ws.links = false, contentMap{}, nil
		o.makeComplex(ws)
	}
}
