package flash

import (
	"io"

	"github.com/flashindexer/flashindexer/flash/internal/lane"
	"github.com/flashindexer/flashindexer/flash/internal/snapshot"
)

// ErrSnapshot: a snapshot that is truncated, corrupted, of another version,
// or inconsistent (a node not one position past its parent, in version 1 a
// sequence hash that is not its parent's chain, a parent listed after its
// child, a block listed twice for one worker, an engine id on two blocks, a
// removed block kept with no descendant). The checksum only catches damage:
// every structural rule a worker's state obeys is checked on its own, so a
// snapshot made by hand is held to them too. Restore returns it and changes
// nothing. The format is internal/snapshot's.
var ErrSnapshot = snapshot.ErrSnapshot

// Dump writes a snapshot of every worker, or of the listed ones, to w. Each
// worker is read on its own writer between two of its events, so each is
// consistent while writes continue; different workers may be captured at
// slightly different moments. It returns the number of engine ids written.
func (ix *Indexer) Dump(w io.Writer, workers ...Worker) (int, error) {
	return ix.lanes.Dump(w, view[lane.Worker](workers)...)
}

// Restore loads a snapshot written by Dump. Every worker in it gets exactly
// the state it had in the snapshot (replacing what the index held for it,
// predictions too: snapshots hold none); other workers are untouched.
// Events accepted before the call apply first, as with Flush. A truncated,
// corrupted or inconsistent snapshot returns an error wrapping ErrSnapshot
// and changes nothing; so does one with more new workers than the free
// slots (ErrTooManyWorkers). On a closed index it returns ErrClosed and
// changes nothing; when Close lands while Restore runs, it returns ErrClosed
// and only the lanes it reached before Close hold their restored workers.
func (ix *Indexer) Restore(r io.Reader) error { return ix.lanes.Restore(r) }
