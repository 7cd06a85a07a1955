package flash

import (
	"time"
	"unsafe"

	"github.com/flashindexer/flashindexer/flash/internal/search"
	"github.com/flashindexer/flashindexer/jump"
)

// FindMatches writes into dst every worker's depth for q: the number of
// leading blocks of q it holds. Lock-free; with a reused dst it allocates
// nothing. Sequence hashes are computed only as deep as the search reaches,
// and not at all when q carries them.
//
// The search (jump search with binary search inside a failed jump):
// the active set starts as the workers holding position 0; at checkpoints
// J apart it tests popcount(active AND holders) == popcount(active), an exact
// subset test since every worker's set is prefix-closed; on a shortfall the
// workers that dropped out are located by binary search inside the jump,
// O(log J) probes per group of drop-outs, and the jumps resume.
//
// Every call is counted in Stats (Queries, QueryBlocks, and when some
// worker matched QueryHits and QueryMatchedBlocks, with one atomic add for
// all four); of the calls with one dst, the first and one in
// LatencySampleEvery after it are timed into QueryLatency.
func (ix *Indexer) FindMatches(q Query, dst *Scores) {
	dst.Reset()
	n, key := len(q.Locals), uintptr(unsafe.Pointer(dst))
	dst.probes = 0
	if n == 0 {
		if ix.queries.Count(key, 0, 0) {
			ix.queries.Fold(key)
		}
		return
	}
	dst.calls++
	timed := dst.calls%LatencySampleEvery == 1
	var t0 time.Time
	if timed {
		t0 = time.Now()
	}
	need := jump.Scratch(ix.search.Words, ix.jump)
	if cap(dst.sets) < need {
		dst.sets = make([]uint64, need)
	}
	seqs, computed := q.Seqs, n
	if !q.HasSeqs() {
		seqs, computed = dst.SeqScratch(n), 0
	}
	var f search.Finder
	f.Start(&ix.search, view[uint64](q.Locals), view[uint64](seqs), computed, view[search.Hit](dst.Matches))
	dst.probes = f.Run(dst.sets[:need], &dst.pred)
	dst.Matches = view[Match](f.Hits())
	if timed {
		ix.latency.observe(time.Since(t0))
	}
	switch deepest := f.Deepest(); {
	case n >= search.BigBlocks:
		ix.queries.CountBig(key, n, deepest)
	case ix.queries.Count(key, n, deepest):
		ix.queries.Fold(key)
	}
}

// view reinterprets s as a slice of U, length and capacity kept: for types
// of one layout (Block and worker.Block, Match and search.Hit, the hash
// types and uint64), which layout.go checks as it compiles.
func view[U, T any](s []T) []U {
	return unsafe.Slice((*U)(unsafe.Pointer(unsafe.SliceData(s))), cap(s))[:len(s)]
}
