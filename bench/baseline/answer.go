package baseline

import "github.com/flashindexer/flashindexer/flash"

// answer collects one query's matches: each worker's depth and, in an index
// of several tiers, its nested tier depths, folded from the fastest tier of
// each position it holds along the query (what a TierSink hears).
type answer struct {
	dst    *flash.Scores
	tokens int
	blocks func(flash.Worker) int
	tiers  int
	marks  map[flash.Worker]*tierMark // workers seen in a tier slower than the fastest
}

// tierMark is a worker's walk so far: the slowest of the fastest tiers of
// the positions it holds, and the depth of each faster tier.
type tierMark struct {
	slowest int
	depth   [flash.MaxTiers]int32
}

func newAnswer(dst *flash.Scores, cfg *flash.Config, blocks func(flash.Worker) int) answer {
	dst.Tiers = cfg.Tiers
	return answer{dst: dst, tokens: cfg.BlockSize, blocks: blocks, tiers: cfg.NumTiers()}
}

// at notes that w holds the query's position i, fastest in tier f.
func (a *answer) at(w flash.Worker, i int, f flash.Tier) {
	if f == 0 {
		return
	}
	m := a.marks[w]
	if m == nil {
		if a.marks == nil {
			a.marks = map[flash.Worker]*tierMark{}
		}
		m = &tierMark{}
		a.marks[w] = m
	}
	for ; m.slowest < int(f); m.slowest++ {
		m.depth[m.slowest] = int32(i)
	}
}

// emit adds w's match: it holds the query's first d positions.
func (a *answer) emit(w flash.Worker, d int) {
	m := flash.Match{Worker: w, Depth: d, Tokens: d * a.tokens, Blocks: a.blocks(w)}
	from := 0
	if mk := a.marks[w]; mk != nil {
		m.TierDepth, from = mk.depth, mk.slowest
	}
	for t := from; t < a.tiers; t++ {
		m.TierDepth[t] = int32(d)
	}
	a.dst.Matches = append(a.dst.Matches, m)
}

// setTier records t as the fastest tier of an entry in *m, keeping only
// the entries slower than tier 0 (none in an index of one tier).
func setTier[K comparable](m *map[K]flash.Tier, k K, t flash.Tier) {
	if t == 0 {
		delete(*m, k)
		return
	}
	if *m == nil {
		*m = map[K]flash.Tier{}
	}
	(*m)[k] = t
}
