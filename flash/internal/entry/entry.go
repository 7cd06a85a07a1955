package entry

import (
	"math/bits"
	"sync/atomic"

	"github.com/flashindexer/flashindexer/arena"
	"github.com/flashindexer/flashindexer/bitset"
	"github.com/flashindexer/flashindexer/internal/keyhash"
	"github.com/flashindexer/flashindexer/internal/order"
	"github.com/flashindexer/flashindexer/shardmap"
)

// Entry is one entry's table value: the worker set (inline form) or the
// arena handle of a slot holding it. 0 is no entry.
type Entry uint64

// In the handle form, a handle is tagged with handleTag (an arena.Handle's
// top bit is always 0), and a value without the tag is the set of its
// workers itself, when all of them are below inlineSlots: a wide index
// whose busy workers took the low slots (slots are taken lowest first)
// keeps their entries as the inline form does, and moves an entry to an
// arena slot when a worker past them joins it.
const (
	handleTag   = 1 << 63
	inlineSlots = 63
)

// handle is e's arena handle (handle form, tagged).
func (e Entry) handle() arena.Handle { return arena.Handle(e &^ handleTag) }

// inline reports whether e, of a handle-form index, is a set in the value
// (or no entry).
func (e Entry) inline() bool { return e&handleTag == 0 }

// Sets says how an index keeps its worker sets.
type Sets struct {
	// Arena holds the handle form's slots (unused inline).
	Arena *arena.Arena
	// Inline: sets are one word and live in the table's values.
	Inline bool
}

// Find returns the entry of (pos, seq) in tab, or 0. Lock-free: a handle may
// be stale by the time it is read; Read validates it. It peeks
// (shardmap.Map.Peek): the caller reads tab.Epoch before its first Find
// and after its last, and discards what it found if Epoch moved.
func (s *Sets) Find(tab *shardmap.Map, pos int, seq uint64) Entry {
	return Entry(tab.Peek(pos, seq))
}

// Read writes into out the members of mask (all workers when mask is nil)
// in entry e, and returns how many there are; for e == 0, none. ok is
// false when the slot was freed or reused during the read.
func (s *Sets) Read(e Entry, mask, out []uint64) (int, bool) {
	if s.Inline || e.inline() {
		b := uint64(e)
		if mask != nil {
			b &= mask[0]
		}
		out[0] = b
		if !s.Inline {
			clear(out[1:])
		}
		return bits.OnesCount64(b), true
	}
	sl := s.Arena.Slot(e.handle().Ref())
	v := arena.Version(sl)
	if !e.handle().Names(v) {
		return 0, false
	}
	var c int
	switch b := arena.Bits(sl); {
	case mask == nil:
		bitset.Load(out, b)
		c = bitset.Count(out)
	default:
		c = bitset.AndInto(out, mask, b)
	}
	return c, arena.Version(sl) == v
}

// Holds reports whether the entry (pos, seq) of tab holds worker slot w
// (for invariant checks: it validates a handle's slot and its key).
func (s *Sets) Holds(tab *shardmap.Map, pos int, seq uint64, w int) bool {
	e := Entry(tab.Get(pos, seq))
	if e == 0 {
		return false
	}
	if s.Inline {
		return uint64(e)&(1<<w) != 0
	}
	if e.inline() {
		return w < inlineSlots && uint64(e)&(1<<w) != 0
	}
	sl := s.Arena.Slot(e.handle().Ref())
	return arena.Current(sl, e.handle()) && arena.Seq(sl) == seq && bitset.AtomicTest(arena.Bits(sl), w)
}

// Members calls f with each worker slot in entry e of a table whose sets
// start at slot base (a plane's first), for invariant checks.
func (s *Sets) Members(e Entry, base int, f func(slot int)) {
	if s.Inline || e.inline() {
		for b := uint64(e); b != 0; b &= b - 1 {
			f(base + bits.TrailingZeros64(b))
		}
		return
	}
	bs := arena.Bits(s.Arena.Slot(e.handle().Ref()))
	for i := range bs {
		for b := atomic.LoadUint64(&bs[i]); b != 0; b &= b - 1 {
			f(64*i + bits.TrailingZeros64(b))
		}
	}
}

// Reserve sets arena room aside for worker slot w, which will hold up to
// n blocks (n < 0 gives it back): in the handle form, a worker at
// inlineSlots or past it moves each entry it is the first such member of
// to an arena slot, so its blocks bound the slots it takes. Other workers
// take none.
func (s *Sets) Reserve(w, n int) {
	if !s.Inline && w >= inlineSlots {
		s.Arena.Reserve(n)
	}
}

// setBit sets worker slot w in the arena slot of handle-form entry e, and
// reports whether it was set already.
func (s *Sets) setBit(e Entry, w int) (had bool) {
	b := arena.Bits(s.Arena.Slot(e.handle().Ref()))
	had = bitset.AtomicTest(b, w)
	if !had {
		bitset.AtomicSet(b, w)
	}
	return had
}

// setOwnBit is setBit for the entries' only writer: readers load the word
// atomically, and no other writer changes it, so a release store sets the
// bit where setBit's read-modify-write locks the line.
func (s *Sets) setOwnBit(e Entry, w int) (had bool) {
	p := &arena.Bits(s.Arena.Slot(e.handle().Ref()))[w>>6]
	old, bit := atomic.LoadUint64(p), uint64(1)<<(w&63)
	if old&bit != 0 {
		return true
	}
	order.Publish(p, old|bit)
	return false
}

// Writer changes the entries of one lane's workers.
type Writer struct {
	Sets *Sets
	// Tabs are the shared tables it writes (the index's, or the lane's
	// own): one, or with planes one per plane, where worker slot w is bit
	// w%64 of plane w/64's one-word sets (Plane). Use sets them.
	Tabs  []shardmap.Writer
	Excl  bool             // no other lane writes Tabs: sole writers, no shard locks
	Alloc *arena.Allocator // the lane's arena allocator (handle form)
}

// Use makes wr write tabs, as their sole writer (excl) or sharing them.
func (wr *Writer) Use(tabs []*shardmap.Map, excl bool) {
	wr.Tabs, wr.Excl = make([]shardmap.Writer, len(tabs)), excl
	for i, t := range tabs {
		if excl {
			wr.Tabs[i] = t.SoleWriter()
		} else {
			wr.Tabs[i] = t.Writer()
		}
	}
}

// Plane returns the table that holds worker slot w's bits and w's bit in
// its sets.
func (wr *Writer) Plane(w int) (shardmap.Writer, int) {
	if len(wr.Tabs) == 1 {
		return wr.Tabs[0], w
	}
	return wr.Tabs[w>>6], w & 63
}

// Attach sets worker slot w in the entry (pos, seq), creating the entry if
// needed, and reports whether the bit was set already.
func (wr *Writer) Attach(pos int, seq uint64, w int) (had bool) {
	return wr.AttachKey(pos, wr.Key(seq), w)
}

// Key is seq with its slot hash (the same in every table of the process),
// for AttachKey and the prefetches.
func (wr *Writer) Key(seq uint64) keyhash.Key { return wr.Tabs[0].Key(seq) }

// Direct reports whether the lane is alone on its tables of one-word sets:
// then AttachKey(pos, k, w) is Or(pos, k, 1<<b, 0) on w's plane (tab, b :=
// Plane(w)), which a caller on the per-block path calls itself (AttachKey
// does not inline).
func (wr *Writer) Direct() bool { return wr.Excl && wr.Sets.Inline }

// AttachKey is Attach of the sequence hash k.K, which Key made.
func (wr *Writer) AttachKey(pos int, k keyhash.Key, w int) (had bool) {
	s, seq := wr.Sets, k.K
	tab, b := wr.Plane(w)
	if wr.Excl {
		// The lane alone writes the table: no lock, and one probe finds
		// the entry or the slot a new one goes in.
		if s.Inline || w < inlineSlots {
			// A set in the value (or a new one) takes w's bit; in the
			// handle form, a handle's slot does.
			unless := uint64(handleTag)
			if s.Inline {
				unless = 0
			}
			e := Entry(tab.Or(pos, k, 1<<b, unless))
			if s.Inline || e.inline() {
				return uint64(e)&(1<<b) != 0
			}
			return s.setOwnBit(e, w)
		}
		e := Entry(tab.GetOrPut(pos, k, func() uint64 {
			return uint64(wr.Alloc.AllocWith(seq, w)) | handleTag
		}))
		switch {
		case e == 0:
			return false
		case !e.inline():
			return s.setOwnBit(e, w)
		}
		promoted := wr.promote(seq, uint64(e), w)
		tab.Update(pos, k, func(uint64) uint64 { return promoted })
		return false
	}
	// Other lanes write the table: the shard stays locked while the entry
	// changes, so that no Detach frees a handle this reads.
	tab.Update(pos, k, func(old uint64) uint64 {
		e := Entry(old)
		switch {
		case s.Inline || e.inline() && w < inlineSlots: // (the handle form has one plane: b is w)
			had = old&(1<<b) != 0
			return old | 1<<b
		case !e.inline():
			had = s.setBit(e, w)
			return old
		case e == 0:
			return uint64(wr.Alloc.AllocWith(seq, w)) | handleTag
		}
		return wr.promote(seq, old, w)
	})
	return had
}

// promote returns the tagged handle of a new arena slot holding the inline
// set and worker w, which the set's value does not fit. The slot's words
// are written before the caller publishes the handle in the table.
func (wr *Writer) promote(seq, set uint64, w int) uint64 {
	h := wr.Alloc.AllocWith(seq, w)
	p := &arena.Bits(wr.Sets.Arena.Slot(h.Ref()))[0]
	atomic.StoreUint64(p, atomic.LoadUint64(p)|set)
	return uint64(h) | handleTag
}

// Detach clears worker slot w in the entry (pos, seq), which the worker
// holds; the last worker out removes the entry from the table (and frees
// its slot).
func (wr *Writer) Detach(pos int, seq uint64, w int) {
	tab, b := wr.Plane(w)
	var freed arena.Handle
	free := false
	tab.Update(pos, tab.Key(seq), func(old uint64) uint64 {
		e := Entry(old)
		switch {
		case e == 0: // unreachable while the worker's state is consistent
			return 0
		case wr.Sets.Inline || e.inline():
			return old &^ (1 << b)
		}
		// The last worker out deletes the entry; when the workers left
		// fit an inline set, the value becomes that set. Either way the
		// value changes before the slot is freed: a reader that finds the
		// slot stale looks again and finds the new value.
		bs := arena.Bits(wr.Sets.Arena.Slot(e.handle().Ref()))
		bitset.AtomicClear(bs, w)
		if set, ok := inlineSet(bs); ok {
			freed, free = e.handle(), true
			return set
		}
		return old
	})
	if free {
		wr.Alloc.Free(freed)
	}
}

// inlineSet returns the set of shared words b as an inline value, or false
// when a worker in it is at inlineSlots or past it.
func inlineSet(b []uint64) (uint64, bool) {
	set := atomic.LoadUint64(&b[0])
	if set>>inlineSlots != 0 {
		return 0, false
	}
	for i := 1; i < len(b); i++ {
		if atomic.LoadUint64(&b[i]) != 0 {
			return 0, false
		}
	}
	return set, true
}
