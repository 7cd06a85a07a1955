package flash

import (
	"github.com/flashindexer/flashindexer/flash/internal/worker"
)

// Memory is what an index's parts hold, in bytes of capacity (what they
// have allocated and keep, used or not), with what they count. It is meant
// for metrics and sizing: a router that knows its fleet divides by the
// (block, worker) pairs it holds.
type Memory struct {
	// Tables: the shared tables of exact and of predicted blocks, slots
	// and headers (every lane's, with WithLaneTables), and the room set
	// aside for hinted workers (WithReservedCapacity).
	Tables int
	// TableRoom: the part of Tables set aside for hinted workers that no
	// table has taken yet.
	TableRoom int
	// Entries: arena slots of the sets of four or more workers, one of them
	// past slot 61, of an index past 128 MaxWorkers.
	Entries int
	// Nodes: the workers' node chunks, free lists and, for complex
	// workers, the lists of children.
	Nodes int
	// IDs: the workers' engine-id maps and aliases.
	IDs int
	// Content: the content maps of complex workers.
	Content int
	// Predictions: the workers' predicted blocks (Predictor), less their
	// bits in the tables of predicted blocks, which Tables counts.
	Predictions int

	Keys      int // shared entries (live table keys)
	NodeCount int // nodes in use, ghosts included
	IDCount   int // engine ids held
}

// Total is the sum of the parts' bytes.
func (m Memory) Total() int {
	return m.Tables + m.Entries + m.Nodes + m.IDs + m.Content + m.Predictions
}

// Memory walks the index's parts, each lane's workers between two of its
// events (as Dump does). Not for hot paths.
func (ix *Indexer) Memory() Memory {
	var m Memory
	m.Tables, m.TableRoom, m.Keys = ix.search.TableStats()
	if !ix.sets.Inline {
		m.Entries = int(ix.sets.Arena.Stats().ReservedBytes)
	}
	var wm worker.Memory
	ix.lanes.Memory(&wm)
	m.Nodes, m.IDs, m.Content, m.NodeCount, m.IDCount = wm.Nodes, wm.IDs, wm.Content, wm.NodeCount, wm.IDCount
	m.Predictions = wm.Predictions
	return m
}
