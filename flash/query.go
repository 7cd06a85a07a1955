package flash

import (
	"cmp"
	"slices"

	"github.com/flashindexer/flashindexer/flash/internal/search"
)

// Query is a request's prompt as block hashes from position 0.
//
// Seqs is optional: nil, or the sequence hashes of Locals (Seqs[i] the chain
// of Locals[0..i]), for example from a Dynamo-compatible frontend or from
// TokenHasher.Query. Seqs of another length than Locals are ignored and the
// index computes the chain itself, only as deep as its search reaches.
type Query struct {
	Locals []LocalHash
	Seqs   []SeqHash
}

// HasSeqs reports whether q carries usable sequence hashes.
func (q *Query) HasSeqs() bool { return len(q.Seqs) == len(q.Locals) && len(q.Seqs) > 0 }

// Match is one worker's answer to a query.
type Match struct {
	Worker Worker
	// Depth is the number of leading query blocks the worker holds,
	// consecutively from position 0: by its engine's events, or the
	// leading blocks predicted for it (Predictor) if they go deeper. Always
	// > 0 in Scores.
	Depth int
	// Tokens is Depth × the index's block size.
	Tokens int
	// Blocks is the number of blocks the worker holds in all (for
	// tie-breaks): engine ids, predictions not counted.
	Blocks int
	// Predicted is how many of those Depth blocks rest on predictions
	// alone: the worker's events say it holds the first Depth − Predicted.
	// 0 when nothing was predicted for it.
	Predicted int
}

// Scores is the reusable result of FindMatches. Reusing one Scores across
// queries makes FindMatches allocate nothing once its buffers have grown.
// A Scores must not be used by two goroutines at once.
type Scores struct {
	// Matches lists every worker with depth > 0, in no particular order
	// (Sort orders them).
	Matches []Match

	st search.State // the search's buffers
}

// Probes returns how many index entries the last FindMatches looked up:
// D/J + drop-out groups × log J for the jump search.
func (s *Scores) Probes() int { return s.st.Probes }

// Reset empties the result, keeping its buffers.
func (s *Scores) Reset() { s.Matches = s.Matches[:0] }

// Depth returns w's depth, 0 if it is absent.
func (s *Scores) Depth(w Worker) int {
	for i := range s.Matches {
		if s.Matches[i].Worker == w {
			return s.Matches[i].Depth
		}
	}
	return 0
}

// Sort orders Matches by depth, deepest first, then by worker.
func (s *Scores) Sort() { slices.SortFunc(s.Matches, compareMatches) }

func compareMatches(a, b Match) int {
	if c := cmp.Compare(b.Depth, a.Depth); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Worker.ID, b.Worker.ID); c != 0 {
		return c
	}
	return cmp.Compare(a.Worker.DPRank, b.Worker.DPRank)
}

// Best returns the deepest match; among equally deep ones, the worker holding
// the fewest blocks, then the lowest worker. ok is false when no worker matched.
func (s *Scores) Best() (best Match, ok bool) {
	for i, m := range s.Matches {
		if i == 0 || m.Depth > best.Depth ||
			(m.Depth == best.Depth && (m.Blocks < best.Blocks ||
				(m.Blocks == best.Blocks && compareMatches(m, best) < 0))) {
			best, ok = m, true
		}
	}
	return best, ok
}
