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
	// TierDepth[t], for each tier t of the index (Config.Tiers): the
	// leading query blocks the worker holds in tier t or a faster one,
	// predicted blocks counting in the fastest. They nest: TierDepth[0] ≤
	// TierDepth[1] ≤ … ≤ TierDepth[n−1] = Depth; past the index's n tiers
	// they are 0. Blocks up to TierDepth[0] are on the GPU; from
	// TierDepth[t−1] to TierDepth[t], a copy from tier t away.
	TierDepth [MaxTiers]int32
}

// Scores is the reusable result of FindMatches. Reusing one Scores across
// queries makes FindMatches allocate nothing once its buffers have grown.
// A Scores must not be used by two goroutines at once.
type Scores struct {
	// Matches lists every worker with depth > 0, in no particular order
	// (Sort orders them).
	Matches []Match
	// Tiers are the tiers of the index that filled it (FindMatches sets
	// them): Best weighs each match's depths by them.
	Tiers []TierSpec

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

// Best returns the match of the highest score; among equal scores, the
// worker holding the fewest blocks, then the lowest worker. ok is false
// when no worker matched. A match's score is its tier-weighted depth
// (Match.Score): its Depth in an index of one tier.
func (s *Scores) Best() (best Match, ok bool) {
	bestScore := 0.0
	for i := range s.Matches {
		m := &s.Matches[i]
		sc := m.Score(s.Tiers)
		if i == 0 || sc > bestScore ||
			(sc == bestScore && (m.Blocks < best.Blocks ||
				(m.Blocks == best.Blocks && compareMatches(*m, best) < 0))) {
			best, bestScore, ok = *m, sc, true
		}
	}
	return best, ok
}

// Score returns m's tier-weighted depth: the sum over tiers t of
// tiers[t].Weight × (TierDepth[t] − TierDepth[t−1]), so that a block found
// in a slower tier is worth less than one found on the GPU; its Depth when
// there is at most one tier.
func (m *Match) Score(tiers []TierSpec) float64 {
	if len(tiers) <= 1 {
		return float64(m.Depth)
	}
	score, prev := 0.0, int32(0)
	for t := range tiers {
		score += tiers[t].Weight * float64(m.TierDepth[t]-prev)
		prev = m.TierDepth[t]
	}
	return score
}
