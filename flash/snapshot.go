package flash

import (
	"io"
	"slices"

	"github.com/flashindexer/flashindexer/internal/snapshot"
	"github.com/flashindexer/flashindexer/internal/worker"
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
	want := map[Worker]bool{}
	for _, x := range workers {
		want[x] = true
	}
	var all []snapshot.Worker
	for _, ln := range ix.lanes {
		ln.call(func() {
			for x, ws := range ln.workers {
				if len(want) == 0 || want[x] {
					all = append(all, worker.Dump(ws))
				}
			}
		})
	}
	slices.SortFunc(all, func(a, b snapshot.Worker) int {
		if a.ID != b.ID {
			if a.ID < b.ID {
				return -1
			}
			return 1
		}
		return int(a.Rank) - int(b.Rank)
	})
	return snapshot.Write(w, all)
}

// Restore loads a snapshot written by Dump. Every worker in it gets exactly
// the state it had in the snapshot (replacing what the index held for it);
// other workers are untouched. A truncated, corrupted or inconsistent
// snapshot returns an error wrapping ErrSnapshot and changes nothing; so
// does one with more new workers than free slots (ErrTooManyWorkers). On a
// closed index it returns ErrClosed and changes nothing; when Close lands
// while Restore runs, Restore returns ErrClosed and only the lanes it
// reached before Close (if any) hold their restored workers.
func (ix *Indexer) Restore(r io.Reader) error {
	if ix.closed.Load() {
		return ErrClosed
	}
	sws, err := snapshot.Read(r, ix.cfg.MaxDepth)
	if err != nil {
		return err
	}
	ix.workersMu.Lock()
	dir := *ix.directory.Load()
	newWorkers := 0
	for _, sw := range sws {
		if _, ok := dir[Worker{ID: sw.ID, DPRank: sw.Rank}]; !ok {
			newWorkers++
		}
	}
	free := ix.cfg.MaxWorkers - ix.slots.Used()
	ix.workersMu.Unlock()
	if newWorkers > free {
		return ErrTooManyWorkers
	}
	byLane := map[*lane][]snapshot.Worker{}
	for _, sw := range sws {
		ln := ix.laneOf(sw.ID)
		byLane[ln] = append(byLane[ln], sw)
	}
	var firstErr error
	for ln, list := range byLane {
		err := ln.callOpen(func() {
			for _, sw := range list {
				if err := ln.restoreWorker(sw); err != nil && firstErr == nil {
					firstErr = err
				}
			}
		})
		if err != nil {
			return err
		}
	}
	return firstErr
}

// restoreWorker replaces one worker's state. The caller owns the lane.
func (ln *lane) restoreWorker(sw snapshot.Worker) error {
	w := Worker{ID: sw.ID, DPRank: sw.Rank}
	ws := ln.workers[w]
	if ws == nil {
		slot, err := ln.ix.intern(w)
		if err != nil {
			return err
		}
		ws = ln.own.New(w.ID, w.DPRank, slot)
		ln.workers[w] = ws
	} else {
		ln.own.Clear(ws)
	}
	ln.own.Restore(ws, sw)
	ln.ix.slots.SetBlocks(ws.Slot, ws.Blocks())
	return nil
}
