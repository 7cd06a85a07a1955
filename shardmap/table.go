package shardmap

import (
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/order"
	"github.com/flashindexer/flashindexer/internal/pages"
)

// A table's header is two lines: what readers read, which changes only
// when the table is made or reused, and what its writer counts at every
// insert. On one line, each insert took the line from the cores of the
// readers probing that position (or, headers being 88 bytes in a batch,
// the next one), and their next probe there waited for it.
// A table holds keys (live or tombstones) in up to 3/4 of its slots
// (loadEighths), or 7/8 in a map made WithDenseTables, and a full one is
// rebuilt with its live keys in at most half of the new one.
const (
	loadEighths      = 6
	denseLoadEighths = 7
)

type table struct {
	mask  uint64         // slots - 1
	bmask uint64         // buckets - 1; a bucket is 4 slots, one cache line
	base  unsafe.Pointer // &slots[0]: probes index without bounds checks
	slots []uint64       // key, value interleaved; 2*(mask+1) words
	zero  atomic.Uint64
	_     [64 - 56]byte
	used  int    // keys set, live or tombstone (writers only)
	live  int    // keys with a value, key 0 included (writers only)
	next  *table // the next spare of its size (tableAlloc)
	// limit is the map's load (in eighths) of the slots: a key that would
	// make used more rebuilds the table first. It follows from mask, and is
	// kept so that orRun checks a new key's room with a load and a compare
	// (seven instructions a new key, computed).
	limit int
	// pooled: its slots were carved from a reservation (Reserve), whose
	// words stay the map's; replaced, it stays a spare.
	pooled bool
	_      [64 - 33]byte
}

// headerBytes is a table header's size.
const headerBytes = int(unsafe.Sizeof(table{}))

// tableAlloc hands out tables. Small ones (up to carveWords words of
// slots) come from batches of headerBatch headers and slots carved from
// chunks of chunkWords: a map spread over hundreds of positions builds a
// thousand small tables as it fills, and an allocation each for header and
// slots would be most of its writers' allocations. Larger tables are
// allocated on their own, header included. Words a reservation set aside
// (Reserve) are carved first, for tables of every size.
//
// A replaced or dropped table becomes a spare of its size, while the
// spares stay within 1/spareShare of the live tables' bytes; the next
// table of that size is a spare, cleared. So a full cache in steady state,
// whose content moves between positions (tables grow at some and shrink
// or go at others) and whose tables fill with tombstones (rebuilt at the
// size they have), allocates nothing. A reader may still be probing a
// replaced table, so taking a spare first advances the map's Epoch; what
// a reader read is sure only if Epoch did not move meanwhile (Get checks
// it; Peek leaves it to the caller). Past the share, the spares of the
// sizes least recently asked for go first: memory follows the live
// tables. (A small spare keeps its chunk reachable, as the chunk's live
// tables do; when content leaves, the live bytes and with them the spares
// fall.)
type tableAlloc struct {
	mu      sync.Mutex
	headers []table  // the current batch's unused headers
	words   []uint64 // the current chunk's unused words
	// spare lists each size's spares (log2 of the capacity); the bytes
	// are their slots'.
	spare                 [64]*table
	liveBytes, spareBytes int
	// used is when each size was last asked for or left, on clock.
	used  [64]uint64
	clock uint64

	// A reservation (Reserve): pieces of reserved words not yet carved,
	// header batches made ahead, each size's replaced tables carved from
	// it (kept, as the reservation's words are), and the words reserved
	// and asked for (less what was given back).
	pool           [][]uint64
	poolWords      int
	batches        [][]table
	pspare         [64]*table
	reserved, want int
}

// spareShare: spares take at most a quarter of the live tables' bytes.
const spareShare = 4

const (
	headerBatch = 32
	chunkWords  = 8192 // 64 KiB: page-aligned, so carved buckets are line-aligned
	carveWords  = 256  // tables of up to 128 slots (2 KiB) are carved
)

// newTable returns an empty table of capacity slots (a power of two, at
// least minCapacity), or of twice that: a spare, cleared, or a new one.
func (m *Map) newTable(capacity int) *table {
	n := 2 * capacity
	a := &m.alloc
	cls := bits.TrailingZeros(uint(capacity))
	a.mu.Lock()
	a.liveBytes += 8 * n
	a.clock++
	a.used[cls] = a.clock
	// A spare of its size, or else of twice it: content moves between
	// positions, and the sizes its tables need drift as it does. A
	// reservation's spares first: they stay whether used or not.
	for c := cls; c <= cls+1; c++ {
		t := a.pspare[c]
		if t != nil {
			a.pspare[c] = t.next
		} else if t = a.spare[c]; t != nil {
			a.spare[c] = t.next
			a.spareBytes -= 8 * len(t.slots)
		} else {
			continue
		}
		t.next = nil
		a.used[c] = a.clock
		a.liveBytes += 8*len(t.slots) - 8*n
		a.mu.Unlock()
		m.recycle(t)
		return t
	}
	var t *table
	var slots []uint64
	if p := a.carve(n); p != nil {
		t, slots = a.header(), p
		t.pooled = true
		a.mu.Unlock()
	} else if n <= carveWords {
		if len(a.words) < n {
			a.words = make([]uint64, chunkWords)
		}
		// Carved sizes are multiples of 16 words (two lines) and a chunk
		// starts on a page, so every bucket stays on one cache line.
		t = a.header()
		slots, a.words = a.words[:n:n], a.words[n:]
		a.mu.Unlock()
	} else {
		a.mu.Unlock()
		t, slots = new(table), make([]uint64, n)
	}
	t.mask, t.bmask, t.limit = uint64(capacity-1), uint64(capacity/bucketSlots-1), capacity*m.load8/8
	t.base, t.slots = unsafe.Pointer(&slots[0]), slots
	return t
}

// header returns an unused table header: from the current batch, a batch
// a reservation made, or a new batch. Called under a.mu.
func (a *tableAlloc) header() *table {
	if len(a.headers) == 0 {
		if k := len(a.batches); k > 0 {
			a.headers, a.batches = a.batches[k-1], a.batches[:k-1]
		} else {
			a.headers = make([]table, headerBatch)
		}
	}
	t := &a.headers[0]
	a.headers = a.headers[1:]
	return t
}

// carve returns n words of the reservation, on whole lines, or nil when no
// piece left holds n. Called under a.mu.
func (a *tableAlloc) carve(n int) []uint64 {
	for i, p := range a.pool {
		if len(p) < n {
			continue
		}
		s := p[:n:n]
		if p = p[n:]; len(p) < 2*minCapacity {
			a.pool[i] = a.pool[len(a.pool)-1]
			a.pool = a.pool[:len(a.pool)-1]
			a.poolWords -= len(p)
		} else {
			a.pool[i] = p
		}
		a.poolWords -= n
		return s
	}
	return nil
}

// reserveWords is the words of table memory Reserve sets aside per key
// (48 bytes): a key's slot (16 bytes) in a table between three eighths and
// three quarters full, and the earlier sizes of the tables, which a
// reservation keeps. A map of 200,000 keys over 600 positions, most of
// them early as a prompt's blocks are, takes 35 and 10 bytes a key
// (TestMap_ReserveFillsWithoutAllocating).
const reserveWords = 6

// maxPiece: reservations grow in pieces of up to 64Ki words (512 KiB, a
// table of 32Ki slots), at most that much beyond what was asked for.
const maxPiece = 1 << 16

// keysPerHeader: Reserve makes a table header for every 32 keys, what a
// map of 100 keys a position builds, its replaced sizes included.
const keysPerHeader = 32

// Reserve tells the map that it will hold keys more keys (fewer when keys
// is negative: what was reserved for them may serve later reservations),
// at positions below positions: it sets reserveWords words a key aside,
// beyond what earlier reservations still count (in pieces that grow as
// the reservation does: maxPiece), from which tables are carved before any
// is allocated, and a table header for every 32 keys;
// and it makes the levels of the first positions (up to the inline ones).
// A map whose tables fit its reservation (most keys at early positions, as
// a prompt's blocks are) then fills without allocating. A table carved from
// the reservation grows 4× at every size (not only below quadrupleBelow)
// while more than half of the reservation is left. A replaced table
// carved from the reservation stays for the next table of its size, as the
// reservation's words do: what is reserved is kept until the map goes.
// Writers may run; not for hot paths.
func (m *Map) Reserve(keys, positions int) {
	a := &m.alloc
	a.mu.Lock()
	a.want += keys * reserveWords
	need := a.want - a.reserved
	if need > 0 {
		// A piece is at least as large as the pieces before it, up to
		// maxPiece: tables are carved from one piece each, and a table
		// larger than one small worker's room (a fleet's first positions)
		// fits the pieces that many such workers reserve together.
		need = max(need, min(a.reserved, maxPiece))
		a.reserved += need
	}
	a.mu.Unlock()
	if need > 0 {
		// A piece starts on a cache line (a small allocation need not),
		// and tables are carved in multiples of two lines.
		buf := make([]uint64, need+7)
		pages.Touch(buf) // its page faults now, not in the writers' stores
		off := int(-uintptr(unsafe.Pointer(&buf[0]))>>3) & 7
		hdrs := make([]table, (need+keysPerHeader*reserveWords-1)/(keysPerHeader*reserveWords))
		a.mu.Lock()
		a.pool = append(a.pool, buf[off:off+need:off+need])
		a.poolWords += need
		a.batches = append(a.batches, hdrs)
		a.mu.Unlock()
	}
	if positions = min(positions, hotPositions); positions > 0 {
		m.level(positions - 1)
	}
}

// reservedRoom reports whether the reservation's words not yet carved
// number at least words, and at least half of all it reserved: past half,
// tables grow as an unreserved map's do, so that the reservation (sized
// for that growth, reserveWords) still holds the keys it was made for.
func (m *Map) reservedRoom(words int) bool {
	a := &m.alloc
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.poolWords >= words && 2*a.poolWords >= a.reserved
}

// retire takes t, which its writer has just replaced or dropped, out of
// the live tables and keeps it as a spare of its size; then, while the
// spares pass their share of the live bytes, drops spares of the sizes
// least recently asked for or left.
func (m *Map) retire(t *table) {
	a := &m.alloc
	cls, b := bits.TrailingZeros(uint(t.capacity())), 8*len(t.slots)
	a.mu.Lock()
	a.liveBytes -= b
	a.clock++
	a.used[cls] = a.clock
	if t.pooled {
		t.next, a.pspare[cls] = a.pspare[cls], t
		a.mu.Unlock()
		return
	}
	t.next, a.spare[cls] = a.spare[cls], t
	a.spareBytes += b
	// Past the share, the spares of the size least recently asked for or
	// left go first.
	for a.spareBytes*spareShare > a.liveBytes {
		c := -1
		for k, sp := range a.spare {
			if sp != nil && (c < 0 || a.used[k] < a.used[c]) {
				c = k
			}
		}
		sp := a.spare[c]
		a.spare[c], sp.next = sp.next, nil
		a.spareBytes -= 8 * len(sp.slots)
	}
	a.mu.Unlock()
}

// recycle empties t, a spare, for its next use. Readers may still probe
// it: the epoch moves first, and on machines that may reorder plain stores
// past it (and under the race detector) the words are cleared with atomic
// stores, which stay after it.
func (m *Map) recycle(t *table) {
	m.recycles.Add(1)
	if order.StoresInOrder && !order.Race {
		clear(t.slots)
	} else {
		for i := range t.slots {
			atomic.StoreUint64(&t.slots[i], 0)
		}
	}
	t.zero.Store(0)
	t.used, t.live = 0, 0
}

// initWord writes a word no reader may use yet (order.Init): a value
// before its key is set, or any word of a new or recycled table. A reader
// still probing a recycled table discards what it read there (Epoch), but
// only if no write reaches it before the epoch's advance: on machines that
// may reorder plain stores past it, an atomic store.
func initWord(p *uint64, v uint64) {
	if order.StoresInOrder {
		order.Init(p, v)
		return
	}
	atomic.StoreUint64(p, v)
}

// home is the bucket where a key of hash h is probed first: the hash's low
// bits, into which Hash folds every input bit. (The top bits, which would
// keep a table in hash order, are a product's high word alone: keys that
// differ only above bit 32 clustered there under some secrets, 2.5 probes
// on average and 8 at the 99th percentile, TestMap_HashFloodingBounded.) A
// rebuild walks the old table in order, so its keys land in two runs of
// the new one, each written in order.
func (t *table) home(h uint64) uint64 { return h & t.bmask }

// key returns the address of slot i's key; the value follows it. i must be
// at most mask.
func (t *table) key(i uint64) *uint64 { return (*uint64)(unsafe.Add(t.base, i*16)) }
func (t *table) val(i uint64) *uint64 { return (*uint64)(unsafe.Add(t.base, i*16+8)) }

func (t *table) capacity() int { return int(t.mask + 1) }

// Stats describes a map's memory.
type Stats struct {
	Positions  int
	Tables     int
	Keys       int // live keys
	Tombstones int
	Slots      int // capacity, all tables
	Spares     int // replaced tables kept for reuse (tableAlloc)
	SpareBytes int // their slots' bytes
	Reserved   int // reserved bytes not yet carved into tables (Reserve)
	Bytes      int // table memory, spares and reservation included
}

// Stats walks every shard under its lock. Not for hot paths.
func (m *Map) Stats() Stats {
	d := m.dir.Load()
	s := Stats{Positions: len(d.levels)}
	for _, lv := range d.levels {
		for i := range lv.shards {
			sh := &lv.shards[i]
			sh.mu.Lock()
			if t := sh.tab.Load(); t != nil {
				s.Tables++
				s.Keys += t.live
				s.Tombstones += t.used - (t.live - b2i(t.zero.Load() != 0))
				s.Slots += t.capacity()
				s.Bytes += 16*t.capacity() + headerBytes
			}
			sh.mu.Unlock()
		}
		s.Bytes += int(unsafe.Sizeof(*lv))
	}
	a := &m.alloc
	a.mu.Lock()
	for _, t := range slices.Concat(a.spare[:], a.pspare[:]) {
		for ; t != nil; t = t.next {
			s.Spares++
			s.SpareBytes += 8 * len(t.slots)
			s.Bytes += 8*len(t.slots) + headerBytes
		}
	}
	s.Reserved = 8 * a.poolWords
	s.Bytes += s.Reserved
	for _, b := range a.batches {
		s.Bytes += headerBytes * len(b)
	}
	a.mu.Unlock()
	return s
}
