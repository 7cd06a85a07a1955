// Package jump is the index's search: for one query of n positions, the
// depth of every worker, the number of leading positions it holds, found by
// jump search with binary search inside a failed jump.
//
// The search knows nothing of storage. It asks a Prober which members of a
// set of workers hold one position of the query, and tells it each worker's
// depth. Sets are bitsets of bw words (bit i: worker slot i).
//
// Contract: every worker's held positions are prefix-closed (a worker that
// holds position p holds every position before it), which is what makes a
// popcount an exact subset test. The search reports each worker that holds
// position 0 exactly once, with its depth; no other.
//
// The algorithm: the active set starts as the workers holding position 0.
// At checkpoints J apart it probes with the active set as the mask: if as
// many workers answer as are active, every one of them holds the checkpoint
// (the popcount of active AND holders equals that of active, an exact
// subset test under prefix-closure) and the search jumps on. On a shortfall
// the workers that dropped out are located by binary search inside the
// jump, and a binary search that meets workers stopping at two depths
// splits in two. A query whose deepest worker holds D positions and whose
// workers stop at G distinct depths costs at most
//
//	2 + (D-1)/J + G·⌈log2 J⌉
//
// probes (Bound).
package jump

import (
	"math/bits"

	"github.com/flashindexer/flashindexer/bitset"
)

// Prober answers the search's questions about one query.
type Prober interface {
	// Probe writes into out the members of mask (every worker when mask
	// is nil) that hold position pos, and returns how many there are.
	// maskCount is popcount(mask) when the caller knows it, else -1.
	Probe(pos int, mask, out []uint64, maskCount int) int
	// Emit reports that every member of s holds exactly depth leading
	// positions.
	Emit(s []uint64, depth int)
}

// Scratch is the number of words of scratch sets Search needs for sets of
// bw words and jumps of J positions.
func Scratch(bw, J int) int { return (3 + 2*(bits.Len(uint(J))+1)) * bw }

// Bound is the most probes Search makes for a query whose deepest worker
// holds depth positions, whose workers stop at groups distinct depths,
// with jumps of J positions.
func Bound(depth, groups, J int) int {
	if depth == 0 {
		return 1
	}
	return 2 + (depth-1)/J + groups*bits.Len(uint(J-1))
}

// Search finds the depth of every worker holding position 0 of a query of
// n positions (n ≥ 1) and reports each through p.Emit; J ≥ 1 is the jump;
// sets holds at least Scratch(bw, J) words. It returns the number of probes
// it made. It allocates nothing.
//
// Go compiles a generic function once per shape and calls a type
// parameter's methods through a dictionary: indirect calls, and a prober
// holding a pointer to its caller's stack moves that to the heap. The flash
// index measured +14% per query at depth 16 and 16 workers through this
// function, so it runs a copy specialized to its prober instead, generated
// from this file by flash/internal/specialize (calls direct, its state on the
// stack); a test fails when the copy falls behind this file. (A resumable
// search driven by a loop in the caller measured +26%.)
func Search[P Prober](p P, n, J, bw int, sets []uint64) int {
	s := searcher[P]{bw: bw, sets: sets}
	active, next, dropped := s.set(0), s.set(1), s.set(2)
	cnt := s.probe(p, 0, nil, active, 0)
	if cnt == 0 {
		return s.probes
	}
	lo := 0 // every active worker holds positions 0..lo
	for lo < n-1 {
		c := min(lo+J, n-1)
		got := s.probe(p, c, active, next, cnt)
		if got != cnt {
			bitset.AndNotInto(dropped, active, next)
			s.resolve(p, dropped, lo, c, 0)
			if got == 0 {
				return s.probes
			}
		}
		active, next = next, active
		cnt, lo = got, c
	}
	p.Emit(active, n)
	return s.probes
}

// searcher is a search's scratch and probe count. The prober is passed to
// each call, not kept here: escape analysis does not tell a struct's fields
// apart, so a prober pointer kept beside the scratch would leak with it,
// and a caller's stack prober would move to the heap.
type searcher[P Prober] struct {
	bw     int
	sets   []uint64
	probes int
}

// set returns scratch set k.
func (s *searcher[P]) set(k int) []uint64 {
	return s.sets[k*s.bw : (k+1)*s.bw : (k+1)*s.bw]
}

func (s *searcher[P]) probe(p P, pos int, mask, out []uint64, maskCount int) int {
	s.probes++
	return p.Probe(pos, mask, out, maskCount)
}

// resolve finds the depth of every worker in set: each holds position lo
// and none holds hi. Workers stopping at two depths split the search in
// two; each half goes on with the next level's scratch sets.
func (s *searcher[P]) resolve(p P, set []uint64, lo, hi, level int) {
	for hi-lo > 1 {
		m := lo + (hi-lo)/2
		in, out := s.set(3+2*level), s.set(4+2*level)
		k := s.probe(p, m, set, in, -1)
		if k == 0 { // nobody holds m: all stop before it
			hi = m
			continue
		}
		if bitset.AndNotInto(out, set, in) == 0 { // everybody holds m
			lo = m
			continue
		}
		s.resolve(p, out, lo, m, level+1)
		set, lo = in, m
		level++
	}
	p.Emit(set, lo+1)
}
