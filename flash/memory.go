package flash

import "unsafe"

// Memory is what an index's parts hold, in bytes of capacity (what they
// have allocated and keep, used or not), with what they count. It is meant
// for metrics and sizing: a router that knows its fleet divides by the
// (block, worker) pairs it holds.
type Memory struct {
	// Tables: the shared tables, slots and headers (every lane's, with
	// WithLaneTables).
	Tables int
	// Entries: arena slots of worker sets wider than one word (0 with
	// MaxWorkers ≤ 64: the sets are the tables' values).
	Entries int
	// Nodes: the workers' node chunks, free lists and, for complex
	// workers, the lists of children.
	Nodes int
	// IDs: the workers' engine-id maps and aliases.
	IDs int
	// Content: the content maps of complex workers.
	Content int

	Keys      int // shared entries (live table keys)
	NodeCount int // nodes in use, ghosts included
	IDCount   int // engine ids held
}

// Total is the sum of the parts' bytes.
func (m Memory) Total() int { return m.Tables + m.Entries + m.Nodes + m.IDs + m.Content }

// Memory walks the index's parts: each lane's workers on its writer between
// two events (as Dump does), the tables under their shard locks. Not for
// hot paths.
func (ix *Indexer) Memory() Memory {
	var m Memory
	for _, t := range ix.tabs {
		st := t.Stats()
		m.Tables += st.Bytes
		m.Keys += st.Keys
	}
	if !ix.inline {
		m.Entries = int(ix.ar.Stats().ReservedBytes)
	}
	for _, ln := range ix.lanes {
		ln.call(func() {
			for _, ws := range ln.workers {
				ws.memory(&m)
			}
		})
	}
	return m
}

// memory adds the worker's parts to m. The caller owns its lane.
func (ws *workerState) memory(m *Memory) {
	for _, c := range ws.chunks {
		m.Nodes += cap(c) * int(unsafe.Sizeof(node{}))
	}
	for _, c := range ws.links {
		m.Nodes += cap(c) * int(unsafe.Sizeof(nodeLinks{}))
	}
	m.Nodes += cap(ws.free) * 4
	m.NodeCount += int(ws.n) - len(ws.free)
	m.IDs += len(ws.ids.b)*int(unsafe.Sizeof(idBucket{})) +
		cap(ws.aliases)*int(unsafe.Sizeof(aliasID{})) + cap(ws.freeAliases)*4
	m.IDCount += ws.ids.n
	m.Content += len(ws.content.kv) + len(ws.content.ctrl)
}
