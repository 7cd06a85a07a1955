package flash

import (
	"math/bits"

	"github.com/flashindexer/flashindexer/arena"
	"github.com/flashindexer/flashindexer/bitset"
	"github.com/flashindexer/flashindexer/shardmap"
)

// seqEntry (the design's SeqEntry) is one entry of the shared index: the
// content (position, sequence hash) and the set of workers holding it. The
// lane's shard table maps (position, sequence hash) to the entry's value.
// The sequence hash names the whole prefix, so finding an entry is one
// table probe however many prefixes put the same chunk at the same
// position.
//
// An entry's value takes one of two forms, fixed per index:
//
//   - inline (MaxWorkers ≤ 64): the value is the worker set itself, one
//     word. A table slot never changes key and its value is published
//     atomically, so a reader that finds the key reads one consistent set;
//     a store is one table write, with nothing else to allocate or free.
//   - a handle (wider sets): the value is the arena.Handle of a slot holding
//     the version, sequence hash and worker words; readers validate the
//     version around their read of the words.
//
// The methods below are the whole protocol: findEntry and readEntry for
// readers (lock-free, validated against the slot's reuse), attach and
// detach for the lane that owns the worker (under the entry's shard lock,
// or alone on a table of its own).
type seqEntry uint64

// handle is e's arena handle (handle form only).
func (e seqEntry) handle() arena.Handle { return arena.Handle(e) }

// findEntry returns the entry of (pos, seq) in tab, or 0. Lock-free: a
// handle may be stale by the time it is read; readEntry validates it.
func (ix *Indexer) findEntry(tab *shardmap.Map, pos int, seq SeqHash) seqEntry {
	return seqEntry(tab.Get(pos, uint64(seq)))
}

// readEntry writes into out the members of mask (all workers when mask is
// nil) in entry e, and returns how many there are; for e == 0, none. ok is
// false when the slot was freed or reused during the read (the caller
// looks the entry up again).
func (ix *Indexer) readEntry(e seqEntry, mask, out []uint64, maskCount int) (int, bool) {
	if ix.inline {
		b := uint64(e)
		if mask != nil {
			b &= mask[0]
		}
		out[0] = b
		return bits.OnesCount64(b), true
	}
	if e == 0 {
		clear(out)
		return 0, true
	}
	s := ix.ar.Slot(e.handle().Ref())
	v := arena.Version(s)
	if v&1 != 0 || uint32(v) != e.handle().Version() {
		return 0, false
	}
	var c int
	switch b := arena.Bits(s); {
	case mask == nil:
		bitset.Load(out, b)
		c = bitset.Count(out)
	case maskCount >= 0 && ix.wide && bitset.IsSubset(mask, b):
		// A checkpoint that every active worker passes: the subset kernel
		// answers with an early exit, no set to build.
		copy(out, mask)
		c = maskCount
	default:
		c = bitset.AndInto(out, mask, b)
	}
	return c, arena.Version(s) == v
}

// lock opens the shard of (pos, seq) in the lane's table for writing, into
// *l.
func (ln *lane) lock(l *shardmap.Locked, pos int, seq SeqHash) {
	if ln.excl {
		ln.tab.ExclusiveInto(l, pos, uint64(seq))
		return
	}
	ln.tab.LockInto(l, pos, uint64(seq))
}

// attach sets worker slot w in the entry (pos, seq), creating the entry if
// needed, and reports whether the bit was set already.
func (ln *lane) attach(pos int, seq SeqHash, w int) (had bool) {
	if ln.excl {
		if ln.ix.inline {
			return ln.tab.ExclusiveOr(pos, uint64(seq), 1<<w)&(1<<w) != 0
		}
		// The lane alone writes the table: a lookup needs no lock, and a
		// new entry goes in with ExclusiveOr (into an absent or deleted
		// key, so its value becomes the handle).
		if e := seqEntry(ln.tab.Get(pos, uint64(seq))); e != 0 {
			return ln.ix.setSlotBit(e, w)
		}
		ln.tab.ExclusiveOr(pos, uint64(seq), uint64(ln.alloc.AllocWith(uint64(seq), w)))
		return false
	}
	var l shardmap.Locked
	ln.lock(&l, pos, seq)
	e := seqEntry(l.Get())
	switch {
	case ln.ix.inline:
		had = uint64(e)&(1<<w) != 0
		if !had {
			l.Put(uint64(e) | 1<<w)
		}
	case e != 0:
		had = ln.ix.setSlotBit(e, w)
	default:
		l.Put(uint64(ln.alloc.AllocWith(uint64(seq), w)))
	}
	l.Unlock()
	return had
}

// setSlotBit sets worker slot w in the arena slot of handle-form entry e,
// and reports whether it was set already.
func (ix *Indexer) setSlotBit(e seqEntry, w int) (had bool) {
	b := arena.Bits(ix.ar.Slot(e.handle().Ref()))
	had = bitset.AtomicTest(b, w)
	if !had {
		bitset.AtomicSet(b, w)
	}
	return had
}

// detach clears worker slot w in the entry (pos, seq), which the worker
// holds; the last worker out removes the entry from the table (and frees
// its slot).
func (ln *lane) detach(pos int, seq SeqHash, w int) {
	var l shardmap.Locked
	ln.lock(&l, pos, seq)
	e := seqEntry(l.Get())
	switch {
	case e == 0: // unreachable while the worker's state is consistent
	case ln.ix.inline:
		l.Put(uint64(e) &^ (1 << w))
	default:
		b := arena.Bits(ln.ix.ar.Slot(e.handle().Ref()))
		if bitset.AtomicClear(b, w) && bitset.IsZero(b) {
			l.Put(0)
			ln.alloc.Free(e.handle())
		}
	}
	l.Unlock()
}
