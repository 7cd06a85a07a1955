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

// Entry is one entry's table value: the worker set (inline form) or, in the
// wide form, the set in one of three shapes. 0 is no entry.
type Entry uint64

// The wide form's shapes, told apart by the value's top two bits:
//
//	00  low     a set of worker slots 0 to 61, a bit each (bits 0–61)
//	01  list    up to L slots of any number, each slot+1 in B bits, filled
//	            from the low end (L×B ≤ 62: B is the bit length of
//	            MaxWorkers, so L is 6 at 256 workers, 5 at 1,024, 4 at
//	            4,096 and at least 3); at least one slot is 62 or past it
//	1x  handle  an arena.Handle (its top bit is always 0) of a slot that
//	            holds the set as a bitset, when more than L slots and one
//	            of them at 62 or past it
//
// Each set has one shape (canonical): low when it can be, else a list when
// it fits, else a handle. In real traffic most entries are held by a few
// workers, so an entry costs its table slot and nothing more however wide
// the fleet: no arena slot of MaxWorkers bits per entry.
const (
	handleTag = 1 << 63
	listTag   = 1 << 62
	formBits  = handleTag | listTag
	lowSlots  = 62
	maxList   = 62 / 8 // the longest list: more than 128 slots take 8 bits
	// MaxSlots is the most worker slots the wide form names (a list of
	// three, 20 bits a slot).
	MaxSlots = 1<<20 - 1
)

// handle is e's arena handle (handle shape).
func (e Entry) handle() arena.Handle { return arena.Handle(e &^ handleTag) }

// isHandle reports whether e, of the wide form, is a handle.
func (e Entry) isHandle() bool { return e&handleTag != 0 }

// low reports whether e, of the wide form, is a low set (or no entry).
func (e Entry) low() bool { return e&formBits == 0 }

// lists is the list shape of an index: n slots of b bits.
type lists struct {
	b, n uint8
	mask uint32
}

// listsFor returns the list shape of an index of that many worker slots
// (at most MaxSlots).
func listsFor(slots int) lists {
	b := max(bits.Len(uint(slots)), 8)
	return lists{b: uint8(b), n: uint8(min(62/b, maxList)), mask: 1<<b - 1}
}

// slot returns the slot in lane i of list e, or -1 when the lane is empty.
func (l lists) slot(e Entry, i int) int { return int(uint64(e)>>(int(l.b)*i)&uint64(l.mask)) - 1 }

// of returns the canonical value of the set of slots ws (at most l.n,
// distinct): low when every slot is below lowSlots, else a list.
func (l lists) of(ws ...int) Entry {
	var lo, v Entry
	for i, w := range ws {
		if w < lowSlots {
			lo |= 1 << w
		}
		v |= Entry(w+1) << (int(l.b) * i)
	}
	if bits.OnesCount64(uint64(lo)) == len(ws) {
		return lo
	}
	return v | listTag
}

// add returns the set e (low or list) with slot w added and whether w was
// in it; ok is false when the set with w fits no value (it takes an arena
// slot).
func (l lists) add(e Entry, w int) (_ Entry, had, ok bool) {
	if e.low() {
		if w < lowSlots {
			return e | 1<<w, e&(1<<w) != 0, true
		}
		if bits.OnesCount64(uint64(e)) >= int(l.n) {
			return e, false, false
		}
		// A list of the low set's slots, in order, then w.
		v, sh := Entry(listTag), 0
		for b := uint64(e); b != 0; b &= b - 1 {
			v |= Entry(bits.TrailingZeros64(b)+1) << sh
			sh += int(l.b)
		}
		return v | Entry(w+1)<<sh, false, true
	}
	// The lanes from the low end: w's, or the first empty one takes it.
	x, want, mask := uint64(e)&^formBits, uint64(w+1), uint64(l.mask)
	for sh := 0; sh < int(l.n)*int(l.b); sh += int(l.b) {
		switch x >> sh & mask {
		case 0:
			return e | Entry(want)<<sh, false, true
		case want:
			return e, true, true
		}
	}
	return e, false, false
}

// remove returns the set e (low or list), which holds slot w, without it,
// canonical.
func (l lists) remove(e Entry, w int) Entry {
	if e.low() {
		return e &^ (1 << w)
	}
	var ws [maxList]int
	n := 0
	for i := 0; i < int(l.n) && l.slot(e, i) >= 0; i++ {
		if s := l.slot(e, i); s != w {
			ws[n] = s
			n++
		}
	}
	return l.of(ws[:n]...)
}

// fits returns the canonical value of the set in bitset b when it fits one
// (low, or a list), or false.
func (l lists) fits(b []uint64) (Entry, bool) {
	var ws [maxList]int
	n, high := 0, false
	for i := range b {
		for x := atomic.LoadUint64(&b[i]); x != 0; x &= x - 1 {
			if n == int(l.n) {
				if high {
					return 0, false
				}
				// More than a list, so far all low: fits only as a low set.
				return lowOf(b)
			}
			ws[n] = 64*i + bits.TrailingZeros64(x)
			high = high || ws[n] >= lowSlots
			n++
		}
	}
	return l.of(ws[:n]...), true
}

// lowOf returns bitset b as a low set, or false when a slot in it is at
// lowSlots or past it.
func lowOf(b []uint64) (Entry, bool) {
	set := atomic.LoadUint64(&b[0])
	if set>>lowSlots != 0 {
		return 0, false
	}
	for i := 1; i < len(b); i++ {
		if atomic.LoadUint64(&b[i]) != 0 {
			return 0, false
		}
	}
	return Entry(set), true
}

// Sets says how an index keeps its worker sets.
type Sets struct {
	// Arena holds the handles' slots (wide form; unused inline).
	Arena *arena.Arena
	// Inline: sets are one word and live in the table's values.
	Inline bool
	l      lists // the wide form's lists
}

// New returns the Sets of an index of that many worker slots whose sets
// are words words: one word a set, in the tables' values (inline), or
// the wide form (words > 1).
func New(slots, words int) Sets {
	return Sets{Arena: arena.New(words), Inline: words == 1, l: listsFor(min(slots, MaxSlots))}
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
	if s.Inline || e.low() {
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
	if !e.isHandle() {
		clear(out)
		c := 0
		for i := 0; i < int(s.l.n); i++ {
			w := s.l.slot(e, i)
			if w < 0 {
				break
			}
			bit := uint64(1) << (w & 63)
			if mask == nil || mask[w>>6]&bit != 0 {
				out[w>>6] |= bit
				c++
			}
		}
		return c, true
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
	if !e.isHandle() {
		held := false
		s.Members(e, 0, func(slot int) { held = held || slot == w })
		return held
	}
	sl := s.Arena.Slot(e.handle().Ref())
	return arena.Current(sl, e.handle()) && arena.Seq(sl) == seq && bitset.AtomicTest(arena.Bits(sl), w)
}

// Members calls f with each worker slot in entry e of a table whose sets
// start at slot base (a plane's first), for invariant checks.
func (s *Sets) Members(e Entry, base int, f func(slot int)) {
	switch {
	case s.Inline || e.low():
		for b := uint64(e); b != 0; b &= b - 1 {
			f(base + bits.TrailingZeros64(b))
		}
	case !e.isHandle():
		for i := 0; i < int(s.l.n) && s.l.slot(e, i) >= 0; i++ {
			f(s.l.slot(e, i))
		}
	default:
		bs := arena.Bits(s.Arena.Slot(e.handle().Ref()))
		for i := range bs {
			for b := atomic.LoadUint64(&bs[i]); b != 0; b &= b - 1 {
				f(64*i + bits.TrailingZeros64(b))
			}
		}
	}
}

// Canonical reports whether e has its set's one shape (invariant checks).
func (s *Sets) Canonical(e Entry) bool {
	switch {
	case s.Inline || e.low():
		return true
	case !e.isHandle():
		var ws []int
		s.Members(e, 0, func(slot int) { ws = append(ws, slot) })
		return len(ws) > 0 && s.l.of(ws...) == e
	}
	_, small := s.l.fits(arena.Bits(s.Arena.Slot(e.handle().Ref())))
	return !small
}

// alone returns, for the wide form's table Or, the value of worker slot w
// alone and the values Or must leave as they are: below lowSlots, w's bit,
// which a low set takes (any other shape is left); past it, w's one-slot
// list, which only a new entry takes.
func (s *Sets) alone(w int) (bit, unless uint64) {
	if w < lowSlots {
		return 1 << w, formBits
	}
	return uint64(s.l.of(w)), ^uint64(0)
}

// setBit sets worker slot w in the arena slot of handle e, and reports
// whether it was set already.
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
	Alloc *arena.Allocator // the lane's arena allocator (the wide form's handles)
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

// AttachRun attaches worker slot w to the entries of keys at positions
// pos, pos+1, … in order, up to the first that holds w already, which it
// leaves as it is, and returns how many it attached: a simple worker's run
// of new blocks in one call, whose caller writes their nodes after it.
// The lane is alone on its tables (Excl). In the wide form the table's run
// makes every new entry (w alone), sets w's bit in low sets and puts w in
// lists with room (shardmap.Lanes), up to a set it leaves (a low set w
// past the low slots joins, a full list, a handle, or w already there),
// which takes w here, in the value's word the run found (or by
// AttachKey's Update where the run's loop did not find it), and goes on
// after it.
func (wr *Writer) AttachRun(pos int, keys []keyhash.Key, w int) int {
	tab, b := wr.Plane(w)
	if wr.Sets.Inline {
		return tab.OrRun(pos, keys, 1<<b, 1<<b)
	}
	bit, unless := wr.Sets.alone(w)
	unless |= bit // stop where w is already
	l := wr.Sets.l
	lanes := shardmap.Lanes{Want: uint64(w + 1), Mask: uint64(l.mask), Bits: uint64(l.b), End: uint64(l.b) * uint64(l.n)}
	for i := 0; ; i++ {
		n, held := tab.OrRunHeld(pos+i, keys[i:], bit, unless, lanes)
		if i += n; i == len(keys) {
			return i
		}
		var had bool
		if held != nil {
			had = wr.addHeld(held, keys[i].K, w)
		} else {
			had = wr.update(tab, pos+i, keys[i], w)
		}
		if had {
			return i
		}
	}
}

// addHeld adds worker slot w to the set whose value is the word at held,
// of the entry of sequence hash seq, which the lane alone writes (a word
// the table's run found), and reports whether w was there.
func (wr *Writer) addHeld(held *uint64, seq uint64, w int) bool {
	e := Entry(atomic.LoadUint64(held))
	v, had := wr.with(e, seq, w)
	if v != e {
		order.Publish(held, uint64(v))
	}
	return had
}

// AttachKey is Attach of the sequence hash k.K, which Key made.
func (wr *Writer) AttachKey(pos int, k keyhash.Key, w int) (had bool) {
	s := wr.Sets
	tab, b := wr.Plane(w)
	if s.Inline {
		if wr.Excl {
			return tab.Or(pos, k, 1<<b, 0)&(1<<b) != 0
		}
		tab.Update(pos, k, func(old uint64) uint64 {
			had = old&(1<<b) != 0
			return old | 1<<b
		})
		return had
	}
	if wr.Excl {
		// The lane alone writes the table: one probe makes a new entry
		// of w alone or, w below lowSlots, sets w's bit in a low set; a
		// handle's slot takes w in place. Any other set changes below.
		bit, unless := s.alone(w)
		switch e := Entry(tab.Or(pos, k, bit, unless)); {
		case e == 0:
			return false
		case e.low() && w < lowSlots:
			return uint64(e)&bit != 0
		case e.isHandle():
			return s.setOwnBit(e, w)
		}
	}
	return wr.update(tab, pos, k, w)
}

// update is AttachKey of the wide form by the table's Update: under the
// entry's shard lock when other lanes write the table, so that no Detach
// frees a handle this reads.
func (wr *Writer) update(tab shardmap.Writer, pos int, k keyhash.Key, w int) (had bool) {
	tab.Update(pos, k, func(old uint64) uint64 {
		v, h := wr.with(Entry(old), k.K, w)
		had = h
		return uint64(v)
	})
	return had
}

// with returns set e (low, list or handle) of the entry of sequence hash
// seq with worker slot w in it, and whether w was there: the value to
// store, e itself when it is unchanged (w there, or an arena slot that
// took w's bit in place: a release store when the lane alone writes the
// entry, else an atomic or).
func (wr *Writer) with(e Entry, seq uint64, w int) (Entry, bool) {
	s := wr.Sets
	if e.isHandle() {
		if wr.Excl {
			return e, s.setOwnBit(e, w)
		}
		return e, s.setBit(e, w)
	}
	v, had, ok := s.l.add(e, w)
	if !ok {
		v = wr.promote(seq, e, w)
	}
	return v, had
}

// promote returns the tagged handle of a new arena slot holding set e (low
// or list) and worker w, which no value fits. The slot's words are written
// before the caller publishes the handle in the table.
func (wr *Writer) promote(seq uint64, e Entry, w int) Entry {
	h := wr.Alloc.AllocWith(seq, w)
	b := arena.Bits(wr.Sets.Arena.Slot(h.Ref()))
	wr.Sets.Members(e, 0, func(slot int) {
		p := &b[slot>>6]
		atomic.StoreUint64(p, atomic.LoadUint64(p)|1<<(slot&63))
	})
	return Entry(h) | handleTag
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
		case wr.Sets.Inline:
			return old &^ (1 << b)
		case !e.isHandle():
			return uint64(wr.Sets.l.remove(e, w))
		}
		// When the workers left fit a value (or none is left), the value
		// becomes it before the slot is freed: a reader that finds the
		// slot stale looks again and finds the new value.
		bs := arena.Bits(wr.Sets.Arena.Slot(e.handle().Ref()))
		bitset.AtomicClear(bs, w)
		if v, ok := wr.Sets.l.fits(bs); ok {
			freed, free = e.handle(), true
			return uint64(v)
		}
		return old
	})
	if free {
		wr.Alloc.Free(freed)
	}
}
