package flash

import (
	"unsafe"

	"github.com/flashindexer/flashindexer/flash/internal/search"
)

// FindMatches writes into dst every worker's depth for q: the number of
// leading blocks of q it holds. Lock-free; with a reused dst it allocates
// nothing. Sequence hashes are computed only as deep as the search (a jump
// search, checkpoints JumpSize apart) reaches, and not at all when q
// carries them. Every call is counted in Stats; of the calls with one dst,
// the first and one in LatencySampleEvery after it are timed into
// QueryLatency.
func (ix *Indexer) FindMatches(q Query, dst *Scores) {
	var seqs []uint64
	if q.HasSeqs() {
		seqs = view[uint64](q.Seqs)
	}
	dst.Tiers = ix.cfg.Tiers
	hits := ix.search.Find(&dst.st, uintptr(unsafe.Pointer(dst)), view[uint64](q.Locals), seqs, view[search.Hit](dst.Matches))
	dst.Matches = view[Match](hits)
}

// view reinterprets s as a slice of U, length and capacity kept: for types
// of one layout (Block and worker.Block, Match and search.Hit, the hash
// types and uint64), which layout.go checks as it compiles.
func view[U, T any](s []T) []U {
	return unsafe.Slice((*U)(unsafe.Pointer(unsafe.SliceData(s))), cap(s))[:len(s)]
}
