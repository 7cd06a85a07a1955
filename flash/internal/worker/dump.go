package worker

import (
	"slices"
	"unsafe"

	"github.com/flashindexer/flashindexer/flash/internal/snapshot"
)

// Dump lists ws's nodes, parents first, with their engine ids (and, in an
// index of several tiers, the tiers holding each).
func (o *Owner) Dump(ws *State) snapshot.Worker {
	ids := map[uint32][]uint64{}
	ws.eachID(func(k uint64, v uint32) { ids[v] = append(ids[v], k) })
	var order []uint32
	for i := uint32(0); i < ws.n; i++ {
		if ws.node(i).live() {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b uint32) int { return int(ws.node(a).pos) - int(ws.node(b).pos) })
	index := make(map[uint32]uint32, len(order))
	sw := snapshot.Worker{ID: ws.ID, Rank: ws.Rank, Nodes: make([]snapshot.Node, len(order))}
	for k, i := range order {
		index[i] = uint32(k) + 1
		n := ws.node(i)
		sn := snapshot.Node{Pos: n.pos, Seq: n.seq, IDs: ids[i]}
		if n.parent != 0 {
			sn.Parent = index[n.parent-1]
		}
		slices.Sort(sn.IDs)
		if o.tiered() {
			sn.Tiers = make([]uint8, len(sn.IDs))
			for j, id := range sn.IDs {
				v, _ := ws.idValue(id)
				sn.Tiers[j] = ws.idTiers(v)
			}
		}
		sw.Nodes[k] = sn
	}
	return sw
}

// Restore gives ws, which holds nothing and has its slot, exactly the state
// sw lists (as snapshot.Read returns it: checked).
func (o *Owner) Restore(ws *State, sw snapshot.Worker) {
	complex := false
	idx := make([]uint32, len(sw.Nodes))
	for k, sn := range sw.Nodes {
		parent := uint32(0)
		if sn.Parent != 0 {
			parent = idx[sn.Parent-1] + 1
		}
		i := ws.newNode(node{seq: sn.Seq, pos: sn.Pos, parent: parent})
		idx[k] = i
		if o.tiered() {
			// Complex since it was made (tiers.go).
			ws.freshTiers(i)
			ws.content.put(sn.Pos, sn.Seq, i)
		}
		for j, id := range sn.IDs {
			ws.addID(id, i)
			ws.node(i).st++
			if o.tiered() {
				v, _ := ws.idValue(id)
				ws.setIDTiers(v, sn.TiersOf(j))
			}
		}
		if len(sn.IDs) != 1 {
			complex = true // a ghost, or several engine ids for one content
		}
	}
	if complex {
		o.makeComplex(ws)
	}
	if o.tiered() {
		for _, i := range idx { // parents first
			o.recut(ws, i)
		}
		o.Check(ws)
		return
	}
	for _, i := range idx { // parents first
		n := ws.node(i)
		if n.refs() > 0 && (n.parent == 0 || ws.node(n.parent-1).attached()) {
			o.W.Attach(int(n.pos), n.seq, ws.Slot)
			n.setAttached(true)
		}
	}
	o.Check(ws)
}

// Memory is what workers' states hold, in bytes of capacity, with what
// they count (flash.Memory's parts).
type Memory struct {
	Nodes, IDs, Content int
	Predictions         int // the lanes' predicted blocks (lane.Set.Memory)
	NodeCount, IDCount  int
}

// AddMemory adds ws's parts to m.
func (ws *State) AddMemory(m *Memory) {
	// A wide index's pooled chunks are its lane's (Owner.AddMemory); a
	// hint's are the worker's own.
	chunks := len(ws.chunks)
	if ws.pool != nil {
		chunks = 0
		for _, c := range ws.chunks {
			if s, _ := ws.pool.slab(c); s == nil {
				chunks++
			}
		}
	}
	m.Nodes += chunks * int(unsafe.Sizeof(chunk{}))
	for _, c := range ws.links {
		m.Nodes += cap(c) * int(unsafe.Sizeof(nodeLinks{}))
	}
	m.NodeCount += int(ws.n) - int(ws.nfree)
	m.IDs += len(ws.ids.b)*int(unsafe.Sizeof(idBucket{})) +
		cap(ws.aliases)*int(unsafe.Sizeof(aliasID{})) + cap(ws.freeAliases)*4
	m.IDCount += ws.ids.n
	m.Content += len(ws.content.kv) + len(ws.content.ctrl)
}
