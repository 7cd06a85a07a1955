package shardmap

import (
	"sync/atomic"
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/keyhash"
	"github.com/flashindexer/flashindexer/internal/order"
)

// Writer is the write side of a write path that names each key with its
// slot hash (Key), prefetches what it will write, and stores runs of keys
// at consecutive positions in one call. It is a value of two words, made
// by Map.Writer or Map.SoleWriter; its methods' keys come from its Key or
// Keyer.
//
// A map has writers of one kind. Shared writers (Map.Writer, and Put, Or
// and Delete) lock a key's shard around each write. A sole writer
// (Map.SoleWriter) takes no lock: the caller guarantees that no other
// goroutine writes the map while it does, through any method (readers may
// run). One probe then finds a key's slot, or the empty slot a new key
// goes in, and an insert into a table with room is one or two stores.
type Writer struct {
	m    *Map
	sole bool
}

// Writer returns a writer that shares the map with others: each write
// locks its key's shard.
func (m *Map) Writer() Writer { return Writer{m, false} }

// SoleWriter returns the map's only writer: it takes no lock.
func (m *Map) SoleWriter() Writer { return Writer{m, true} }

// Map returns the map w writes.
func (w Writer) Map() *Map { return w.m }

// Keyer returns the Keyer of the map's secret: its Key(key) is w.Key(key),
// from a value a loop keeps in registers (w.Key loads the secret from the
// map at each call, again after any store the loop makes).
func (w Writer) Keyer() keyhash.Keyer { return keyhash.New(w.m.k0, w.m.k1) }

// Key returns key with its slot hash in the map, for the methods that
// take one.
func (w Writer) Key(key uint64) keyhash.Key { return keyhash.Key{K: key, H: w.m.hash(key)} }

// open opens k's shard at pos into *l: locked for a shared writer, without
// a lock for the sole one.
func (w Writer) open(l *locked, pos int, key uint64) {
	if w.sole {
		w.m.exclusiveInto(l, pos, key)
		return
	}
	w.m.lockInto(l, pos, key)
}

// Update sets the value of k at pos to f(old), old its value (0: absent),
// and returns old; f returning old changes nothing, 0 deletes the key. f
// runs once, with the key's shard held, and must not use the map.
func (w Writer) Update(pos int, k keyhash.Key, f func(old uint64) uint64) uint64 {
	if w.sole {
		if old, done := w.m.soleUpdate(pos, k, f); done {
			return old
		}
	}
	var l locked
	w.open(&l, pos, k.K)
	old := l.get()
	if v := f(old); v != old {
		l.put(v)
	}
	l.unlock()
	return old
}

// Or sets the bits of mask in the value of k at pos, inserting the key
// with value mask when it is absent, unless the value holds a bit of
// unless, which it leaves as it is; either way it returns the value it
// found (0: absent). mask must not be 0.
func (w Writer) Or(pos int, k keyhash.Key, mask, unless uint64) uint64 {
	if w.sole {
		return w.m.soleOr(pos, k, mask, unless)
	}
	return w.Update(pos, k, func(old uint64) uint64 {
		if old&unless != 0 {
			return old
		}
		return old | mask
	})
}

// GetOrPut returns the value of k at pos; when it is absent (0), it puts
// mk() there first and returns 0. mk is called only then, and must not
// return 0 or use the map.
func (w Writer) GetOrPut(pos int, k keyhash.Key, mk func() uint64) uint64 {
	return w.Update(pos, k, func(old uint64) uint64 {
		if old != 0 {
			return old
		}
		return mk()
	})
}

// OrRun is Or(pos+i, keys[i], mask, unless) for each of keys in order, up
// to the first whose value holds a bit of unless, which it leaves as it
// is; it returns how many it set. unless must hold mask's bits: with
// unless = mask, it stops at a value that has the mask already; with
// unless = ^0, at any value (it inserts absent keys only). A sole writer storing a run of blocks
// (consecutive positions) makes one call, whose loop (orReady) finds each
// key's table ready nearly always and probes it with no call; a call per
// key cost the caller's loop its registers, spilled and reloaded around it
// (Go's calls keep none), and so does a call in the loop: the keys orReady
// leaves take the general path here, outside it.
func (w Writer) OrRun(pos int, keys []keyhash.Key, mask, unless uint64) int {
	n, _ := w.OrRunHeld(pos, keys, mask, unless, Lanes{})
	return n
}

// Lanes is how OrRunHeld adds a member to a value that lists its members
// in lanes, as the wide form's sets of a few workers do
// (flash/internal/entry): a value whose top two bits are 01 holds lanes of
// Bits bits from its low end up to bit End, the first ones members and the
// rest 0. Where the run finds such a value holding a bit of unless, it
// puts Want in the first lane that is 0 and goes on, unless a lane before
// it holds Want or none is 0: there it stops, as at any other value holding
// a bit of unless. The zero Lanes adds to no value.
type Lanes struct {
	Want, Mask uint64 // the member to add (not 0), and a lane's bits
	Bits, End  uint64 // a lane's width, and the lanes' end (at most 62)
}

// OrRunHeld is OrRun that adds to lists of lanes as it goes, and, where the
// run stopped at a value holding a bit of unless that its loop found
// (nearly always, for a sole writer), it returns that value's word too
// (else nil): the caller, the table's sole writer, may load it and store a
// new value (not 0) there with order.Publish, as an Update of the key
// would, up to its next call on the map. So a caller whose values are more
// than bits changes the value where the run stopped without probing for
// its key again.
func (w Writer) OrRunHeld(pos int, keys []keyhash.Key, mask, unless uint64, ln Lanes) (int, *uint64) {
	for i := 0; ; i++ {
		if w.sole {
			n, held := w.m.orReady(pos+i, keys[i:], mask, unless, ln)
			if i += n; held != nil {
				return i, held
			}
		}
		if i == len(keys) || w.Or(pos+i, keys[i], mask, unless)&unless != 0 {
			return i, nil
		}
	}
}

// PrefetchTable asks the CPU for the header of the table that holds k at
// pos, so that a write of it soon after finds it in cache. It reads
// nothing itself and changes nothing.
func (w Writer) PrefetchTable(pos int, k keyhash.Key) {
	if t := w.m.hotTable(pos, k.H); t != nil {
		order.Prefetch(uintptr(unsafe.Pointer(t)))
	}
}

// PrefetchBuckets asks the CPU for the bucket where each of keys is probed
// first, keys[i] at pos+i (past the inline positions it asks for nothing:
// prefetching there would cost the directory's loads). The addresses are
// gathered in Go, up to 64 at a time, and asked for in one call
// (order.PrefetchAll): a call per key, to a routine that cannot inline,
// cost the loop its registers at every key.
func (w Writer) PrefetchBuckets(pos int, keys []keyhash.Key) {
	var addrs [64]uintptr
	for n := hotRun(pos, len(keys)); n > 0; {
		k := min(n, len(addrs))
		bucketRun(w.m.hotFrom(pos), w.m.shardMask, keys[:k], addrs[:k])
		order.PrefetchAll(addrs[:k])
		pos, keys, n = pos+k, keys[k:], n-k
	}
}

// readyTab returns a single writer's table pointer of hash h at pos in
// the common case, and inlines: a hot position whose level exists; else
// nil, and exclusiveTab has it.
func (m *Map) readyTab(pos int, h uint64) *atomic.Pointer[table] {
	if uint(pos) < hotPositions && pos < len(m.dir.Load().levels) {
		return m.hotTab(pos, h)
	}
	return nil
}

// exclusiveTab is readyTab's other case: a position past the hot ones, or
// one whose level it makes (the level must exist for later locks and Stats
// calls).
func (m *Map) exclusiveTab(pos int, h uint64) *atomic.Pointer[table] {
	lv := m.level(pos)
	if uint(pos) < hotPositions {
		return m.hotTab(pos, h)
	}
	return m.shardOf(lv, h).tab
}

// orReady is a sole writer's OrRun loop for the keys whose tables are ready and
// have room, which are nearly all: it stops at the first key that is not
// one (0, its table not made, or full), and returns its index and nil,
// or at the first whose value holds a bit of unless, and returns its index
// and the value's word.
func (m *Map) orReady(pos int, keys []keyhash.Key, mask, unless uint64, ln Lanes) (int, *uint64) {
	n := min(len(keys), min(len(m.dir.Load().levels), hotPositions)-pos)
	if n <= 0 {
		return 0, nil
	}
	return orRun(m.hotFrom(pos), m.shardMask, keys[:n], mask, unless, ln.Want, ln.Mask, ln.Bits, ln.End)
}

// orRunGo is orReady's loop over keys at positions whose levels exist,
// from the one hot names (hotFrom), smask the shard mask, and the Lanes
// its caller gave (want, lmask, lbits, lend): in assembly on
// amd64 (orRun, orrun_amd64.s), where Go's register allocator spilled and
// reloaded the loop's values at every key, and under the race detector and
// elsewhere in Go (orRun is orRunGo).
func orRunGo(hot unsafe.Pointer, smask uint64, keys []keyhash.Key, mask, unless, want, lmask, lbits, lend uint64) (int, *uint64) {
	for i, k := range keys {
		if k.K == 0 {
			return i, nil
		}
		t := hotAt(hot, smask, i, k.H).Load()
		if t == nil {
			return i, nil
		}
		// find, written out, with the value.
		var j, old uint64
		var ok bool
		base, omask := t.base, t.mask<<4
		for o := t.home(k.H) * bucketSlots << 4; ; o = (o + 16*bucketSlots) & omask {
			b := (*bucket)(unsafe.Add(base, o))
			f := b.empty()
			if s := b.slot(k.K, f); s < bucketSlots {
				j, old, ok = o>>4+s, b.value(k.K), s != f
				break
			}
		}
		switch {
		case ok:
			if old&unless != 0 {
				// A list of lanes (Lanes) takes want in its first empty
				// lane, unless it is there or none is empty.
				if lend == 0 || old>>62 != 1 {
					return i, t.val(j)
				}
				sh := uint64(0)
				for sh < lend && old>>sh&lmask != 0 && old>>sh&lmask != want {
					sh += lbits
				}
				if sh >= lend || old>>sh&lmask == want {
					return i, t.val(j)
				}
				order.Publish(t.val(j), old|want<<sh)
				continue
			}
			order.Publish(t.val(j), old|mask)
			t.live += b2i(old == 0)
		case t.used < t.limit:
			initWord(t.val(j), mask)
			order.Publish(t.key(j), k.K) // the value is in place first
			t.used++
			t.live++
		default:
			return i, nil
		}
	}
	return len(keys), nil
}

// soleOr is Writer.Or of a sole writer: in the common case, a table with
// room, one probe and at most two stores, with no locked to fill.
func (m *Map) soleOr(pos int, k keyhash.Key, mask, unless uint64) uint64 {
	key, h := k.K, k.H
	tab := m.readyTab(pos, h)
	if tab == nil {
		tab = m.exclusiveTab(pos, h)
	}
	if t := tab.Load(); t != nil && key != 0 {
		i, ok := t.find(key, h)
		switch {
		case ok:
			old := atomic.LoadUint64(t.val(i))
			if old&unless == 0 && old|mask != old {
				order.Publish(t.val(i), old|mask)
				t.live += b2i(old == 0)
			}
			return old
		case t.used < t.limit:
			initWord(t.val(i), mask)
			order.Publish(t.key(i), key) // the value is in place first
			t.used++
			t.live++
			return 0
		}
	}
	var l locked
	m.exclusiveInto(&l, pos, key)
	old := l.get()
	if old&unless == 0 {
		l.put(old | mask)
	}
	l.unlock()
	return old
}

// soleUpdate is Writer.Update of a sole writer when one probe does it: the
// key (or its tombstone) is in a ready table, or a new one goes in a table
// with room. Else it calls f not at all and reports done false.
func (m *Map) soleUpdate(pos int, k keyhash.Key, f func(old uint64) uint64) (old uint64, done bool) {
	key, h := k.K, k.H
	tab := m.readyTab(pos, h)
	if tab == nil || key == 0 {
		return 0, false
	}
	t := tab.Load()
	if t == nil {
		return 0, false
	}
	i, ok := t.find(key, h)
	switch {
	case ok:
		// The key's value, or 0 for its tombstone, which a value revives.
		old = atomic.LoadUint64(t.val(i))
		switch v := f(old); {
		case v == old:
		case v == 0:
			// A delete may shrink the table: the general path's put,
			// given the probe (a ready table is at an inline position,
			// whose level stays).
			l := locked{m: m, tab: tab, key: key, h: h, seen: t, slot: i, found: true}
			l.put(0)
			l.unlock()
		default:
			order.Publish(t.val(i), v)
			t.live += b2i(old == 0)
		}
		return old, true
	case t.used < t.limit:
		if v := f(0); v != 0 {
			initWord(t.val(i), v)
			order.Publish(t.key(i), key) // the value is in place first
			t.used++
			t.live++
		}
		return 0, true
	}
	return 0, false
}

// hotRun is how many of n keys from pos on are at the inline positions,
// where bucketRun reads their tables' pointers (m.hot).
func hotRun(pos, n int) int { return max(min(n, hotPositions-pos), 0) }

// bucketAddrs writes the address of the bucket where keys[i] at pos+i is
// probed first into addrs[i] (0: no table, or past the inline positions),
// addrs as long as keys at least: the addresses Writer.PrefetchBuckets
// asks for.
func (m *Map) bucketAddrs(pos int, keys []keyhash.Key, addrs []uintptr) {
	addrs = addrs[:len(keys)]
	n := hotRun(pos, len(keys))
	if n > 0 {
		bucketRun(m.hotFrom(pos), m.shardMask, keys[:n], addrs[:n])
	}
	clear(addrs[n:])
}

// bucketRun writes into addrs[i] (as long as keys) the address of the
// bucket where keys[i] is probed first (0: no table), for keys at the
// inline positions from hot's (Map.hotFrom) on.
func bucketRun(hot unsafe.Pointer, smask uint64, keys []keyhash.Key, addrs []uintptr) {
	addrs = addrs[:len(keys)]
	for i, k := range keys {
		var a uintptr
		if t := hotAt(hot, smask, i, k.H).Load(); t != nil {
			a = uintptr(t.base) + uintptr(t.home(k.H)*16*bucketSlots)
		}
		addrs[i] = a
	}
}

// hotTable returns the table of a key of hash h at pos; no table past the
// inline positions (prefetching there would cost the directory's loads).
func (m *Map) hotTable(pos int, h uint64) *table {
	if uint(pos) >= hotPositions {
		return nil
	}
	return m.hotTab(pos, h).Load()
}
