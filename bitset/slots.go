package bitset

import bbs "github.com/bits-and-blooms/bitset"

// Slots hands out dense indexes 0..max-1, lowest free first, so the worker
// sets stay as narrow as the number of live workers allows. It is a growable
// heap bitset (github.com/bits-and-blooms/bitset): the allocator is touched
// only when a worker appears or disappears, never on a hot path, and its
// NextClear finds the lowest free index a word at a time. Not safe for
// concurrent use; the caller serializes.
type Slots struct {
	used *bbs.BitSet
	max  int
	n    int
}

// NewSlots returns an allocator of indexes below max.
func NewSlots(max int) *Slots { return &Slots{used: bbs.New(64), max: max} }

// Alloc returns the lowest free index, or false when all max are taken.
func (s *Slots) Alloc() (int, bool) {
	i, ok := s.used.NextClear(0)
	if !ok {
		i = s.used.Len()
	}
	if int(i) >= s.max {
		return 0, false
	}
	s.used.Set(i)
	s.n++
	return int(i), true
}

// Free returns index i to the allocator. Freeing a free index does nothing.
func (s *Slots) Free(i int) {
	if i >= 0 && s.used.Test(uint(i)) {
		s.used.Clear(uint(i))
		s.n--
	}
}

// Top returns one past the highest index taken (0 when none is).
func (s *Slots) Top() int {
	n := s.used.Len()
	if n == 0 {
		return 0
	}
	i, ok := s.used.PreviousSet(n - 1)
	if !ok {
		return 0
	}
	return int(i) + 1
}

// Used returns how many indexes are taken.
func (s *Slots) Used() int { return s.n }

// Max returns the bound given to NewSlots.
func (s *Slots) Max() int { return s.max }
