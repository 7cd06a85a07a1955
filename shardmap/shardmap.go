package shardmap

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/order"
	"github.com/flashindexer/flashindexer/internal/pages"
)

const (
	// DefaultShardBits: 8 shards per position keep two writers off each
	// other's locks on the hot early positions; more shards would only cost
	// memory for the many deep positions that hold a handful of keys.
	DefaultShardBits = 3
	// minCapacity: a table starts with 8 slots (128 bytes, two cache lines):
	// most deep positions hold one or two keys per shard.
	minCapacity = 8
	// bucketSlots: a probe reads a whole 64-byte line of 4 key/value pairs
	// and picks the match without branches; the loop then almost always
	// ends after one line, so lookups pay no branch mispredictions for the
	// varying probe lengths of plain linear probing.
	bucketSlots = 4
)

// processKeys is the per-process secret of the keyed slot hash.
var processK0, processK1 = func() (uint64, uint64) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("shardmap: no randomness for the hash secret: " + err.Error())
	}
	return binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:]) | 1
}()

// A table's header is two lines: what readers read, which changes only
// when the table is made or reused, and what its writer counts at every
// insert. On one line, each insert took the line from the cores of the
// readers probing that position (or, headers being 88 bytes in a batch,
// the next one), and their next probe there waited for it.
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
	// limit is three quarters of the slots: a key that would make used
	// more rebuilds the table first. It follows from mask, and is kept so
	// that orRun checks a new key's room with a load and a compare (seven
	// instructions a new key, computed); the Go loops compute it.
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
	t.mask, t.bmask, t.limit = uint64(capacity-1), uint64(capacity/bucketSlots-1), capacity*3/4
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

// ReserveWords is the words of table memory Reserve sets aside per key
// (48 bytes): a key's slot (16 bytes) in a table between three eighths and
// three quarters full, and the earlier sizes of the tables, which a
// reservation keeps. A map of 200,000 keys over 600 positions, most of
// them early as a prompt's blocks are, takes 35 and 10 bytes a key
// (TestMap_ReserveFillsWithoutAllocating).
const ReserveWords = 6

// maxPiece: reservations grow in pieces of up to 64Ki words (512 KiB, a
// table of 32Ki slots), at most that much beyond what was asked for.
const maxPiece = 1 << 16

// keysPerHeader: Reserve makes a table header for every 32 keys, what a
// map of 100 keys a position builds, its replaced sizes included.
const keysPerHeader = 32

// Reserve tells the map that it will hold keys more keys (fewer when keys
// is negative: what was reserved for them may serve later reservations),
// at positions below positions: it sets ReserveWords words a key aside,
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
	a.want += keys * ReserveWords
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
		hdrs := make([]table, (need+keysPerHeader*ReserveWords-1)/(keysPerHeader*ReserveWords))
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
// for that growth, ReserveWords) still holds the keys it was made for.
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

// shard is the writer side of one shard: its lock and where its table
// pointer lives (the level's array, or the Map's hot array).
type shard struct {
	mu  sync.Mutex
	tab *atomic.Pointer[table]
	// pad keeps two writers' shards off one cache line.
	_ [64 - 8 - 8]byte
}

// maxShardBits bounds the shards per position, so a level's shards are an
// inline array indexed without a bounds check.
const maxShardBits = 3

type level struct {
	tabs   [1 << maxShardBits]atomic.Pointer[table] // read side, one line
	shards [1 << maxShardBits]shard
	// Past the inline positions, a level whose tables all emptied is
	// released: tables counts its shards with a table, and dead marks a
	// level dropped from the directory (set with every shard locked; a
	// writer that finds it set after locking looks the level up again).
	tables atomic.Int32
	dead   atomic.Bool
}

// levelGroup: levels are allocated 64 at a time (36 KiB), so that the
// trailing levels a shrinking directory drops are whole allocations the
// collector can reclaim.
const levelGroup = 64

type directory struct {
	levels []*level
}

// Map is a position-indexed, sharded hash map from uint64 keys to uint64
// values. The zero value is not usable; call New.
type Map struct {
	k0, k1    uint64
	shardMask uint64 // 2^shardBits - 1
	shardBits uint
	initCap   int
	alloc     tableAlloc

	// recycles counts the spare tables taken for reuse (Epoch).
	recycles atomic.Uint64

	growMu sync.Mutex
	dir    atomic.Pointer[directory]
	// occupied counts the levels past the inline positions that hold a
	// table; when it falls to scanAt the directory is scanned for trailing
	// empty levels to release, and scanAt halves, so draining n levels
	// costs O(n log n) in all.
	occupied atomic.Int64
	scanAt   atomic.Int64

	// hot holds the tables of the first hotPositions positions inline, so a
	// lookup there costs three dependent loads (table pointer, table header,
	// bucket) instead of five: every query starts at position 0 and most
	// stored blocks sit at early positions. Shard s of position p is
	// hot[s*hotPositions+p]: a map of one shard (one writer) has eight
	// consecutive positions' tables on a line, which a prompt's blocks
	// read in turn. (Ordered by position, a line a position, these loads
	// missed the cache 8.6 times as often in the trace's stores at 16
	// workers, simulated.)
	hot [hotPositions << maxShardBits]atomic.Pointer[table]
}

// hotPositions: 1024 positions × 8 shards × 8 bytes = 64 KiB per map; the
// first 1024 blocks cover 512K tokens at block size 512 and 16K at block
// size 16, the depth of nearly every prompt served today.
const hotPositions = 1024

// Option configures a Map.
type Option func(*Map)

// WithShardBits sets 2^b shards per position (0..3).
func WithShardBits(b uint) Option {
	return func(m *Map) { m.shardBits = min(b, maxShardBits) }
}

// WithCapacity presizes every new table for n keys, so that inserting up to
// n keys into one shard never rebuilds it.
func WithCapacity(n int) Option {
	return func(m *Map) {
		c := minCapacity
		for c*3/4 < n {
			c *= 2
		}
		m.initCap = c
	}
}

// ShardBitsFor picks the shards per position for that many writers: shards
// only keep writers off each other's locks, and each splits a position's
// keys into one more table, allocated and grown on its own; so one writer
// gets one shard (and takes no locks), and more get about one shard each,
// up to DefaultShardBits.
func ShardBitsFor(writers int) uint {
	return min(uint(bits.Len(uint(max(writers, 1)-1))), DefaultShardBits)
}

// New returns an empty map.
func New(opts ...Option) *Map {
	m := &Map{k0: processK0, k1: processK1, shardBits: DefaultShardBits, initCap: minCapacity}
	for _, o := range opts {
		o(m)
	}
	m.shardMask = 1<<m.shardBits - 1
	m.dir.Store(&directory{})
	return m
}

func (m *Map) hash(key uint64) uint64 { return Hash(key, m.k0, m.k1) }

// Hash is the keyed slot hash of key under the secret (k0, k1), k1 odd; the
// flash index's private maps place their keys with it too. Its low bits
// pick the bucket, its top bits the shard (and the private maps' tags).
//
// Both factors of the 128-bit product depend on the key: key ⊕ k0, and the
// key with its halves swapped ⊕ k1; the product's halves are XORed, and the
// upper half folded into the lower. A constant second factor left a linear
// structure: keys that differ only in some high bits (as crafted keys
// would) landed in runs of neighbouring buckets under some secrets (up to
// 29 probes at the 99th percentile, TestMap_HashFloodingBounded failing a
// few runs in a hundred). The rotation and the xor cost a cycle beside
// the multiply. An even k1 (0: tests) hashes every key alike.
func Hash(key, k0, k1 uint64) uint64 {
	y := (bits.RotateLeft64(key, 32) ^ k1) & -(k1 & 1)
	hi, lo := bits.Mul64(key^k0, y)
	h := hi ^ lo
	return h ^ h>>32
}

// shardOf picks the shard from the top bits of h; the bucket comes from the
// low bits (table.home).
func (m *Map) shardOf(l *level, h uint64) *shard {
	return &l.shards[(h>>(64-maxShardBits))&m.shardMask]
}

// hotTab returns where the table of hash h's shard at pos lives, for pos
// below hotPositions.
func (m *Map) hotTab(pos int, h uint64) *atomic.Pointer[table] {
	return &m.hot[(h>>(64-maxShardBits))&m.shardMask*hotPositions+uint64(pos)]
}

// hotFrom returns where hotAt finds the table pointers of the positions
// from pos (< hotPositions; a larger pos gives the last one's), for a loop
// over them that keeps it and the shard mask in registers.
func (m *Map) hotFrom(pos int) unsafe.Pointer {
	return unsafe.Pointer(&m.hot[min(pos, hotPositions-1)])
}

// hotAt is hotTab(pos+i, h) from hot = m.hotFrom(pos) and smask =
// m.shardMask, with no bounds check: pos+i < hotPositions and a shard <
// 1<<maxShardBits keep it inside m.hot.
func hotAt(hot unsafe.Pointer, smask uint64, i int, h uint64) *atomic.Pointer[table] {
	return (*atomic.Pointer[table])(unsafe.Add(hot, ((h>>(64-maxShardBits))&smask*hotPositions+uint64(i))*8))
}

// Epoch counts the replaced tables the map has taken for reuse. A reader
// that probed a table the writers replaced meanwhile read a consistent,
// slightly old picture, unless the table was also reused: so a value Peek
// returns is sure when Epoch is the same before and after it.
func (m *Map) Epoch() uint64 { return m.recycles.Load() }

// Get returns the value of key at position pos, or 0. Lock-free: it probes
// again when a table was reused while it probed (Epoch).
func (m *Map) Get(pos int, key uint64) uint64 {
	for {
		e := m.recycles.Load()
		v := m.Peek(pos, key)
		if m.recycles.Load() == e {
			return v
		}
	}
}

// Peek is Get without the check: its value may come from a table reused
// while it probed. A caller reads Epoch before its first Peek and after
// its last, and discards what it read when Epoch moved. Lock-free, and
// it always returns: a reused table is a table, only not the key's.
func (m *Map) Peek(pos int, key uint64) uint64 {
	h := m.hash(key)
	var t *table
	if uint(pos) < hotPositions {
		t = m.hotTab(pos, h).Load()
	} else {
		d := m.dir.Load()
		if uint(pos) >= uint(len(d.levels)) {
			return 0
		}
		t = d.levels[pos].tabs[(h>>(64-maxShardBits))&m.shardMask].Load()
	}
	if t == nil {
		return 0
	}
	if key == 0 {
		return t.zero.Load()
	}
	for b := t.home(h); ; b = (b + 1) & t.bmask {
		p := (*[2 * bucketSlots]uint64)(unsafe.Add(t.base, b*16*bucketSlots))
		// Values are loaded before keys are compared: a key never changes
		// while its table is in use, so a value read next to it is that
		// key's, old or new (a reused table's keys change: Epoch).
		k0, k1, k2, k3 := atomic.LoadUint64(&p[0]), atomic.LoadUint64(&p[2]), atomic.LoadUint64(&p[4]), atomic.LoadUint64(&p[6])
		v0, v1, v2, v3 := atomic.LoadUint64(&p[1]), atomic.LoadUint64(&p[3]), atomic.LoadUint64(&p[5]), atomic.LoadUint64(&p[7])
		v, hit := uint64(0), false
		if k0 == key {
			v, hit = v0, true
		}
		if k1 == key {
			v, hit = v1, true
		}
		if k2 == key {
			v, hit = v2, true
		}
		if k3 == key {
			v, hit = v3, true
		}
		// Slots fill in order and keys are never removed, so an empty last
		// slot ends the probe.
		if hit || k3 == 0 {
			return v
		}
	}
}

// level returns the level of pos, creating levels up to it.
func (m *Map) level(pos int) *level {
	if d := m.dir.Load(); pos < len(d.levels) {
		return d.levels[pos]
	}
	m.growMu.Lock()
	defer m.growMu.Unlock()
	d := m.dir.Load()
	if pos < len(d.levels) {
		return d.levels[pos]
	}
	n := max(2*len(d.levels), pos+1, levelGroup)
	n = (n + levelGroup - 1) / levelGroup * levelGroup
	nd := &directory{levels: make([]*level, n)}
	copy(nd.levels, d.levels)
	var fresh []level
	for i := len(d.levels); i < n; i++ {
		if len(fresh) == 0 {
			fresh = make([]level, levelGroup) // one allocation per group
		}
		lv := &fresh[0]
		fresh = fresh[1:]
		for j := range lv.shards {
			lv.shards[j].tab = &lv.tabs[j]
			if i < hotPositions {
				lv.shards[j].tab = &m.hot[j*hotPositions+i]
			}
		}
		nd.levels[i] = lv
	}
	m.dir.Store(nd)
	if n > hotPositions {
		m.scanAt.Store(max(m.scanAt.Load(), int64(n-hotPositions)/4))
	}
	return nd.levels[pos]
}

// release drops the trailing levels past the inline positions that hold no
// table, once few deep levels are occupied (see occupied). Called with no
// shard lock held.
func (m *Map) release() {
	m.growMu.Lock()
	defer m.growMu.Unlock()
	occ := m.occupied.Load()
	if occ > m.scanAt.Load() {
		return
	}
	m.scanAt.Store(occ / 2)
	d := m.dir.Load()
	n := len(d.levels)
	keep := n
	for keep > hotPositions && d.levels[keep-1].tables.Load() == 0 {
		keep--
	}
	keep = max(hotPositions, (keep+levelGroup-1)/levelGroup*levelGroup)
	if keep >= n {
		return
	}
	drop := d.levels[keep:]
	for _, lv := range drop {
		for j := range lv.shards {
			lv.shards[j].mu.Lock()
		}
	}
	empty := true
	for _, lv := range drop {
		empty = empty && lv.tables.Load() == 0
	}
	if empty {
		for _, lv := range drop {
			lv.dead.Store(true)
		}
		m.dir.Store(&directory{levels: append([]*level(nil), d.levels[:keep]...)})
	}
	for _, lv := range drop {
		for j := range lv.shards {
			lv.shards[j].mu.Unlock()
		}
	}
}

// Locked is a shard held by one writer, for one key. Put reuses the probe of
// the Get before it (the shard is the writer's between them). Use it as a
// variable:
//
//	l := m.Lock(pos, key)
//	v := l.Get()
//	l.Put(v2)
//	l.Unlock()
type Locked struct {
	m   *Map
	lv  *level // nil at the inline positions: their tables stay
	tab *atomic.Pointer[table]
	mu  *sync.Mutex // nil for Exclusive
	key uint64
	h   uint64
	// The probe of the last Get, reused by Put while the table is the same.
	seen  *table
	slot  uint64
	found bool
	// dropped: Put released the last table of a deep level; Unlock then
	// looks for levels to release.
	dropped bool
}

// Lock locks the shard of key at pos for writing, creating the position's
// level if needed.
func (m *Map) Lock(pos int, key uint64) Locked {
	var l Locked
	m.LockInto(&l, pos, key)
	return l
}

// LockInto is Lock writing its result into *l: a Locked is eight words,
// and a writer that opens one per stored block saves copying them.
func (m *Map) LockInto(l *Locked, pos int, key uint64) {
	h := m.hash(key)
	for {
		lv := m.level(pos)
		sh := m.shardOf(lv, h)
		sh.mu.Lock()
		if lv.dead.Load() { // released meanwhile: look it up again
			sh.mu.Unlock()
			continue
		}
		*l = Locked{m: m, tab: sh.tab, mu: &sh.mu, key: key, h: h}
		if uint(pos) >= hotPositions {
			l.lv = lv
		}
		return
	}
}

// Exclusive is Lock for a map with a single writer: it takes no lock, and
// saves the lock's cache line and atomic operation on every write. The
// caller guarantees that no other goroutine writes the map meanwhile (readers
// may run). Unlock of its result does nothing.
func (m *Map) Exclusive(pos int, key uint64) Locked {
	var l Locked
	m.ExclusiveInto(&l, pos, key)
	return l
}

// ExclusiveInto is Exclusive writing its result into *l (see LockInto).
func (m *Map) ExclusiveInto(l *Locked, pos int, key uint64) {
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
	*l = Locked{m: m, lv: lv, tab: tab, key: key, h: h}
}

// ExclusiveOr sets the bits of mask in the value of key at pos, inserting
// the key with value mask when it is absent or deleted, and returns the
// value before (0: absent). It is Exclusive, Get, Put(old|mask) and Unlock
// in one call, for a map with a single writer (the caller guarantees it,
// as for Exclusive; readers may run): the common case, a table with room,
// is one probe and at most two stores, with no Locked to fill. mask must
// not be 0.
func (m *Map) ExclusiveOr(pos int, key, mask uint64) uint64 {
	return m.ExclusiveOrKey(pos, m.Key(key), mask)
}

// Key is a key with its slot hash under one map's secret (Map.Key), for a
// writer that names one key in several calls (prefetches, then the write):
// each call of a method that takes a Key skips hashing it again.
type Key struct{ K, H uint64 }

// Key returns key with its slot hash in m.
func (m *Map) Key(key uint64) Key { return Key{key, m.hash(key)} }

// Keyer hashes keys under one secret (k0, k1), as Hash, from a value a
// loop keeps in two registers: Map.Key loads the secret from the map at
// each call, again after any store the loop makes.
type Keyer struct{ k0, k1 uint64 }

// NewKeyer returns the Keyer of the secret (k0, k1).
func NewKeyer(k0, k1 uint64) Keyer { return Keyer{k0, k1} }

// Keyer returns the Keyer of m's secret: its Key(key) is m.Key(key).
func (m *Map) Keyer() Keyer { return Keyer{m.k0, m.k1} }

// Hash returns Hash(key, k0, k1) of the Keyer's secret.
func (k Keyer) Hash(key uint64) uint64 { return Hash(key, k.k0, k.k1) }

// Key returns key with its slot hash.
func (k Keyer) Key(key uint64) Key { return Key{key, k.Hash(key)} }

// Degenerate reports whether the secret's k1 is even, which hashes every
// key alike (Hash): a map's never is; tests make one to collide keys.
func (k Keyer) Degenerate() bool { return k.k1&1 == 0 }

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
// one whose level it makes (the level must exist for later Lock and Stats
// calls).
func (m *Map) exclusiveTab(pos int, h uint64) *atomic.Pointer[table] {
	lv := m.level(pos)
	if uint(pos) < hotPositions {
		return m.hotTab(pos, h)
	}
	return m.shardOf(lv, h).tab
}

// ExclusiveOrKey is ExclusiveOr of k, which m.Key made.
func (m *Map) ExclusiveOrKey(pos int, k Key, mask uint64) uint64 {
	return m.ExclusiveOrKeyUnless(pos, k, mask, 0)
}

// ExclusiveOrRun is ExclusiveOrKey(pos+i, keys[i], mask) for each of keys
// in order (m.Key made them), up to the first whose value holds a bit of
// mask already, which it leaves as it is; it returns how many it set. One
// writer storing a run of blocks (consecutive positions) makes one call,
// whose loop (orReady) finds each key's table ready nearly always and
// probes it with no call; a call per key cost the caller's loop its
// registers, spilled and reloaded around it (Go's calls keep none), and so
// does a call in the loop: the keys orReady leaves take the general path
// here, outside it. Building the trace's index with capacity hints at 16
// workers: about 25 instructions less a stored block than a call a key,
// and 4 less again with the general path out of the loop.
func (m *Map) ExclusiveOrRun(pos int, keys []Key, mask uint64) int {
	i := 0
	for {
		n, held := m.orReady(pos+i, keys[i:], mask)
		if i += n; held || i == len(keys) {
			return i
		}
		if m.ExclusiveOrKeyUnless(pos+i, keys[i], mask, mask)&mask != 0 {
			return i
		}
		i++
	}
}

// orReady is ExclusiveOrRun's loop for the keys whose tables are ready and
// have room, which are nearly all: it stops at the first key that is not
// one (0, its table not made, or full), and returns its index and false,
// or at the first whose value holds a bit of mask, and returns its index
// and true.
func (m *Map) orReady(pos int, keys []Key, mask uint64) (int, bool) {
	n := min(len(keys), min(len(m.dir.Load().levels), hotPositions)-pos)
	if n <= 0 {
		return 0, false
	}
	return orRun(m.hotFrom(pos), m.shardMask, keys[:n], mask)
}

// orRunGo is orReady's loop over keys at positions whose levels exist,
// from the one hot names (hotFrom), smask the shard mask: in assembly on
// amd64 (orRun, orrun_amd64.s), where Go's register allocator spilled and
// reloaded the loop's values at every key, and under the race detector and
// elsewhere in Go (orRun is orRunGo).
func orRunGo(hot unsafe.Pointer, smask uint64, keys []Key, mask uint64) (int, bool) {
	for i, k := range keys {
		if k.K == 0 {
			return i, false
		}
		t := hotAt(hot, smask, i, k.H).Load()
		if t == nil {
			return i, false
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
			if old&mask != 0 {
				return i, true
			}
			order.Publish(t.val(j), old|mask)
			t.live += b2i(old == 0)
		case (t.used+1)*4 <= t.capacity()*3:
			initWord(t.val(j), mask)
			order.Publish(t.key(j), k.K) // the value is in place first
			t.used++
			t.live++
		default:
			return i, false
		}
	}
	return len(keys), false
}

// ExclusiveOrKeyUnless is ExclusiveOrKey that leaves a value holding any
// bit of unless as it is; either way it returns the value it found.
func (m *Map) ExclusiveOrKeyUnless(pos int, k Key, mask, unless uint64) uint64 {
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
		case (t.used+1)*4 <= t.capacity()*3:
			initWord(t.val(i), mask)
			order.Publish(t.key(i), key) // the value is in place first
			t.used++
			t.live++
			return 0
		}
	}
	var l Locked
	m.ExclusiveInto(&l, pos, key)
	old := l.Get()
	if old&unless == 0 {
		l.Put(old | mask)
	}
	l.Unlock()
	return old
}

// ExclusiveGetOrPutKey returns the value of k (which m.Key made) at pos;
// when it is absent or deleted (0), it puts mk() there first and returns
// 0. mk is called only then, and must not return 0 or use the map. For a
// single writer, as ExclusiveOr: one probe finds the value or the slot
// the new one goes in.
func (m *Map) ExclusiveGetOrPutKey(pos int, k Key, mk func() uint64) uint64 {
	key, h := k.K, k.H
	tab := m.readyTab(pos, h)
	if tab == nil {
		tab = m.exclusiveTab(pos, h)
	}
	if t := tab.Load(); t != nil && key != 0 {
		i, ok := t.find(key, h)
		switch {
		case ok:
			if old := atomic.LoadUint64(t.val(i)); old != 0 {
				return old
			}
			order.Publish(t.val(i), mk())
			t.live++
			return 0
		case (t.used+1)*4 <= t.capacity()*3:
			initWord(t.val(i), mk())
			order.Publish(t.key(i), key) // the value is in place first
			t.used++
			t.live++
			return 0
		}
	}
	var l Locked
	m.ExclusiveInto(&l, pos, key)
	old := l.Get()
	if old == 0 {
		l.Put(mk())
	}
	l.Unlock()
	return old
}

// Unlock releases the shard.
func (l Locked) Unlock() {
	if l.mu != nil {
		l.mu.Unlock()
	}
	if l.dropped {
		l.m.release()
	}
}

// created counts a new table of a deep level.
func (l *Locked) created() {
	if l.lv != nil && l.lv.tables.Add(1) == 1 {
		l.m.occupied.Add(1)
	}
}

// drop releases t when it holds nothing, past the inline positions: a deep
// position's table goes with its last key. It reports whether it did.
func (l *Locked) drop(t *table) bool {
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

// Get returns the key's value, or 0.
func (l *Locked) Get() uint64 {
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

// find returns the slot of key, or the empty slot where it would go: the
// first slot of the probe, from the home bucket's first, that holds key or
// nothing. A bucket's keys fill a prefix of its slots (a key goes in the
// first empty slot of its probe, and no key is cleared from a table), so
// the first empty slot f bounds where key can be in the bucket: find reads
// the four keys at once and picks f, then key's slot before it, each with
// conditional moves. A slot-by-slot loop's exit, taken after a varying
// number of slots, was mispredicted about once a probe; masks of the
// compares cost more instructions (building the trace's index with
// capacity hints at 16 workers: 66 a stored block, against 48).
func (t *table) find(key, h uint64) (uint64, bool) {
	// The probe walks byte offsets (a slot is 16 bytes) from the table's
	// words in locals: the atomic loads would have them read again on
	// every probe.
	base, omask := t.base, t.mask<<4
	for o := t.home(h) * bucketSlots << 4; ; o = (o + 16*bucketSlots) & omask {
		b := (*bucket)(unsafe.Add(base, o))
		f := b.empty()
		if j := b.slot(key, f); j < bucketSlots {
			return o>>4 + j, j != f
		}
	}
}

// bucket is a bucket's slots: key, value, key, value, …
type bucket [2 * bucketSlots]uint64

// empty returns the bucket's first empty slot (bucketSlots: none). The
// keys are a writer's to read: others only read them, so plain loads do
// not race.
func (b *bucket) empty() uint64 {
	f := uint64(bucketSlots)
	if b[6] == 0 {
		f = 3
	}
	if b[4] == 0 {
		f = 2
	}
	if b[2] == 0 {
		f = 1
	}
	if b[0] == 0 {
		f = 0
	}
	return f
}

// slot returns key's slot in the bucket, whose first empty slot is f, or f
// when key is not there.
func (b *bucket) slot(key, f uint64) uint64 {
	j := f
	if b[6] == key {
		j = 3
	}
	if b[4] == key {
		j = 2
	}
	if b[2] == key {
		j = 1
	}
	if b[0] == key {
		j = 0
	}
	return j
}

// value returns the value of key in the bucket, or 0. It picks the value
// with the compares slot makes: loaded through key's slot, its address
// would depend on them, and the compiler keeps the branches of whatever an
// address depends on (each mispredicted, about once a probe).
func (b *bucket) value(key uint64) uint64 {
	v0, v1, v2, v3 := b[1], b[3], b[5], b[7]
	v := uint64(0)
	if b[6] == key {
		v = v3
	}
	if b[4] == key {
		v = v2
	}
	if b[2] == key {
		v = v1
	}
	if b[0] == key {
		v = v0
	}
	return v
}

// Put sets the key's value; 0 deletes the key.
func (l *Locked) Put(val uint64) {
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
	if l.seen != t { // no Get before, or the table was replaced since
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
	if (t.used+1)*4 > t.capacity()*3 {
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

func (l Locked) maybeShrink(t *table) {
	if t.live*16 < t.capacity() && t.capacity() > max(shrinkAbove, l.m.initCap) {
		l.rebuild(t, t.live)
	}
}

// rebuild publishes a new table holding t's live entries, sized so that
// need keys fill at most half of it.
func (l Locked) rebuild(t *table, need int) *table {
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
		no := Hash(k, k0, k1) & nbmask * bucketSlots << 4
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

// PrefetchTable asks the CPU for the header of the table that holds k at
// pos, so that a PrefetchBucket or Lock of it soon after finds it in cache.
// It reads nothing itself and changes nothing.
func (m *Map) PrefetchTable(pos int, k Key) {
	if t := m.hotTable(pos, k.H); t != nil {
		order.Prefetch(uintptr(unsafe.Pointer(t)))
	}
}

// BucketAddr is the address of the bucket where k at pos is probed first,
// or 0 (no table, or past the inline positions): what PrefetchBucket asks
// for. It inlines, for a writer that gathers a batch's addresses and
// prefetches them in one call. It reads nothing but the table's header.
func (m *Map) BucketAddr(pos int, k Key) uintptr {
	if t := m.hotTable(pos, k.H); t != nil {
		return uintptr(t.base) + uintptr(t.home(k.H)*16*bucketSlots)
	}
	return 0
}

// BucketAddrs writes BucketAddr(pos+i, keys[i]) into addrs[i] for each
// of keys (addrs as long at least), in a loop that keeps the map's fields
// in registers.
func (m *Map) BucketAddrs(pos int, keys []Key, addrs []uintptr) {
	addrs = addrs[:len(keys)]
	n := hotRun(pos, len(keys))
	if n > 0 {
		bucketRun(m.hotFrom(pos), m.shardMask, keys[:n], addrs[:n])
	}
	clear(addrs[n:])
}

// PrefetchBuckets is PrefetchBucket(pos+i, keys[i]) for each of keys, in
// one loop: the addresses BucketAddrs would write, asked for as they are
// made.
func (m *Map) PrefetchBuckets(pos int, keys []Key) {
	if n := hotRun(pos, len(keys)); n > 0 {
		bucketRun(m.hotFrom(pos), m.shardMask, keys[:n], nil)
	}
}

// hotRun is how many of n keys from pos on are at the inline positions,
// where bucketRun reads their tables' pointers (m.hot).
func hotRun(pos, n int) int { return max(min(n, hotPositions-pos), 0) }

// bucketRunGo is the loop of BucketAddrs (addrs as long as keys) and of
// PrefetchBuckets (addrs empty), for keys at the inline positions from
// hot's (Map.hotFrom) on. On amd64 it is assembly (bucketRun,
// orrun_amd64.s), where one macro makes the address that both loops write
// or ask for.
func bucketRunGo(hot unsafe.Pointer, smask uint64, keys []Key, addrs []uintptr) {
	for i, k := range keys {
		var a uintptr
		if t := hotAt(hot, smask, i, k.H).Load(); t != nil {
			a = uintptr(t.base) + uintptr(t.home(k.H)*16*bucketSlots)
		}
		if len(addrs) == 0 {
			if a != 0 {
				order.Prefetch(a)
			}
			continue
		}
		addrs[i] = a
	}
}

// PrefetchBucket asks the CPU for the bucket where k at pos is probed
// first.
func (m *Map) PrefetchBucket(pos int, k Key) {
	if a := m.BucketAddr(pos, k); a != 0 {
		order.Prefetch(a)
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
