package shardmap

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/keyhash"
	"github.com/flashindexer/flashindexer/internal/order"
)

// locked is a shard held by one writer, for one key (Writer.Update): put
// reuses the probe of the get before it (the shard is the writer's between
// them).
type locked struct {
	m   *Map
	lv  *level // nil at the inline positions: their tables stay
	tab *atomic.Pointer[table]
	mu  *sync.Mutex // nil for a sole writer
	key uint64
	h   uint64
	// The probe of the last get, reused by put while the table is the same.
	seen  *table
	slot  uint64
	found bool
	// dropped: put released the last table of a deep level; unlock then
	// looks for levels to release.
	dropped bool
}

// lockInto locks the shard of key at pos for writing, into *l, creating
// the position's level if needed.
func (m *Map) lockInto(l *locked, pos int, key uint64) {
	h := m.hash(key)
	for {
		lv := m.level(pos)
		sh := m.shardOf(lv, h)
		sh.mu.Lock()
		if lv.dead.Load() { // released meanwhile: look it up again
			sh.mu.Unlock()
			continue
		}
		*l = locked{m: m, tab: sh.tab, mu: &sh.mu, key: key, h: h}
		if uint(pos) >= hotPositions {
			l.lv = lv
		}
		return
	}
}

// exclusiveInto is lockInto for a sole writer: it takes no lock, and saves
// the lock's cache line and atomic operation on every write.
func (m *Map) exclusiveInto(l *locked, pos int, key uint64) {
	h := m.hash(key)
	var tab *atomic.Pointer[table]
	var lv *level
	if uint(pos) < hotPositions {
		m.level(pos) // the level must exist for later Lock and Stats calls
		tab = m.hotTab(pos, h)
	} else {
		lv = m.level(pos)
		tab = m.shardOf(lv, h).tab
	}
	*l = locked{m: m, lv: lv, tab: tab, key: key, h: h}
}

// unlock releases the shard.
func (l locked) unlock() {
	if l.mu != nil {
		l.mu.Unlock()
	}
	if l.dropped {
		l.m.release()
	}
}

// created counts a new table of a deep level.
func (l *locked) created() {
	if l.lv != nil && l.lv.tables.Add(1) == 1 {
		l.m.occupied.Add(1)
	}
}

// drop releases t when it holds nothing, past the inline positions: a deep
// position's table goes with its last key. It reports whether it did.
func (l *locked) drop(t *table) bool {
	if l.lv == nil || t.live != 0 {
		return false
	}
	l.tab.Store(nil)
	l.m.retire(t)
	if l.lv.tables.Add(-1) == 0 {
		l.m.occupied.Add(-1)
		l.dropped = true
	}
	return true
}

// get returns the key's value, or 0.
func (l *locked) get() uint64 {
	t := l.tab.Load()
	if t == nil {
		return 0
	}
	if l.key == 0 {
		return t.zero.Load()
	}
	i, ok := t.find(l.key, l.h)
	l.seen, l.slot, l.found = t, i, ok
	if ok {
		return atomic.LoadUint64(t.val(i))
	}
	return 0
}

// put sets the key's value; 0 deletes the key.
func (l *locked) put(val uint64) {
	t := l.tab.Load()
	if t == nil {
		if val == 0 {
			return
		}
		t = l.m.newTable(l.m.initCap)
		l.tab.Store(t)
		l.created()
	}
	if l.key == 0 {
		old := t.zero.Swap(val)
		t.live += b2i(val != 0) - b2i(old != 0)
		if !l.drop(t) {
			l.maybeShrink(t)
		}
		return
	}
	i, ok := l.slot, l.found
	if l.seen != t { // no get before, or the table was replaced since
		i, ok = t.find(l.key, l.h)
	}
	l.seen = nil
	if ok {
		old := atomic.LoadUint64(t.val(i))
		order.Publish(t.val(i), val)
		t.live += b2i(val != 0) - b2i(old != 0)
		if !l.drop(t) {
			l.maybeShrink(t)
		}
		return
	}
	if val == 0 {
		return
	}
	if t.used >= t.limit {
		need := t.live + 1
		if t.capacity() < quadrupleBelow || t.pooled && l.m.reservedRoom(8*t.capacity()) {
			// Twice the room: 4× the keys' slots instead of 2×. A table
			// the reservation carved grows so at every size while the
			// reservation has the room (reservedRoom): the words are
			// set aside already, and each generation skipped is a rebuild
			// the writer does not do (with capacity hints, 16 workers on
			// the trace: rebuilds' instructions halved, 6% less time).
			need *= 2
		}
		if c := t.capacity(); need*8 <= c*5 && t.live*8 >= c {
			// Full of tombstones, its keys at most 5/8 of it and at least
			// 1/8: rebuilt at its size. Sized for its keys alone, a table
			// whose keys hover about half of it would double and halve
			// again as the count crossed half at each rebuild, allocating
			// every time; a fleet's prompts span many positions alike, so
			// their tables flip together.
			need = c / 2
		}
		t = l.rebuild(t, need)
		i, _ = t.find(l.key, l.h)
	}
	// The slot is empty: readers ignore its value until its key is set,
	// and the atomic store of the key orders the value's store before it.
	initWord(t.val(i), val)
	order.Publish(t.key(i), l.key) // the value is in place first
	t.used++
	t.live++
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// quadrupleBelow: a full table of fewer slots (4 KiB) grows 4× instead of
// 2×. Each generation of a table is an allocation and a rebuild, and most
// positions' tables stay small (deep positions hold few keys), so skipping
// every other small generation removes about a third of all tables built
// (the Mooncake trace: 1,617 → 1,066) for about 4% more table memory.
const quadrupleBelow = 256

// shrinkAbove: tables up to 64 slots (1 KiB) never shrink, so a shard
// whose few keys come and go does not reallocate on every cycle.
const shrinkAbove = 64

func (l locked) maybeShrink(t *table) {
	if t.live*16 < t.capacity() && t.capacity() > max(shrinkAbove, l.m.initCap) {
		l.rebuild(t, t.live)
	}
}

// rebuild publishes a new table holding t's live entries, sized so that
// need keys fill at most half of it.
func (l locked) rebuild(t *table, need int) *table {
	c := l.m.initCap
	for c < 2*need {
		c *= 2
	}
	nt := l.m.newTable(c)
	nt.zero.Store(t.zero.Load())
	// Both tables walked by byte offsets from their words in locals, as
	// find walks one; a key goes in the first empty slot of its probe, as
	// the new table has no deletes and no key twice.
	// The secret and the new table's bucket mask in locals too: Go
	// reloads a field after any store.
	base, end := t.base, (t.mask+1)<<4
	nbase, nmask, nbmask := nt.base, nt.mask<<4, nt.bmask
	k0, k1 := l.m.k0, l.m.k1
	moved := 0
	for o := uint64(0); o < end; o += 16 {
		k := atomic.LoadUint64((*uint64)(unsafe.Add(base, o)))
		v := atomic.LoadUint64((*uint64)(unsafe.Add(base, o+8)))
		if k == 0 || v == 0 {
			continue
		}
		no := keyhash.Hash(k, k0, k1) & nbmask * bucketSlots << 4
		for atomic.LoadUint64((*uint64)(unsafe.Add(nbase, no))) != 0 {
			no = (no + 16) & nmask
		}
		initWord((*uint64)(unsafe.Add(nbase, no+8)), v)
		initWord((*uint64)(unsafe.Add(nbase, no)), k)
		moved++
	}
	nt.used, nt.live = moved, moved+b2i(nt.zero.Load() != 0)
	l.tab.Store(nt)
	l.m.retire(t)
	return nt
}
