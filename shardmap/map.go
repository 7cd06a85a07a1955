package shardmap

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/keyhash"
)

const (
	// defaultShardBits: 8 shards per position keep two writers off each
	// other's locks on the hot early positions; more shards would only cost
	// memory for the many deep positions that hold a handful of keys.
	defaultShardBits = 3
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
	load8     int // a table's limit, in eighths of its slots
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
	// workers, simulated.) It has hotPositions entries a shard: 8 KiB a
	// map of one shard.
	hot []atomic.Pointer[table]
}

// hotPositions: 1024 positions × 8 bytes = 8 KiB per map and shard; the
// first 1024 blocks cover 512K tokens at block size 512 and 16K at block
// size 16, the depth of nearly every prompt served today.
const hotPositions = 1024

// Option configures a Map.
type Option func(*Map)

// WithShardBits sets 2^b shards per position (0..3).
func WithShardBits(b uint) Option {
	return func(m *Map) { m.shardBits = min(b, maxShardBits) }
}

// WithDenseTables fills each table to 7/8 of its slots before it grows,
// not 3/4: about a tenth less memory a key (the trace's tables: 35 → 31.5
// bytes a key), for probes a little longer near the top of the load, where
// linear probing over 4-slot buckets still finds a key within a line or
// two.
func WithDenseTables() Option {
	return func(m *Map) { m.load8 = denseLoadEighths }
}

// withCapacity presizes every new table for n keys, so that inserting up to
// n keys into one shard never rebuilds it.
func withCapacity(n int) Option {
	return func(m *Map) {
		c := minCapacity
		for c*loadEighths/8 < n {
			c *= 2
		}
		m.initCap = c
	}
}

// ShardBitsFor picks the shards per position for that many writers: shards
// only keep writers off each other's locks, and each splits a position's
// keys into one more table, allocated and grown on its own; so one writer
// gets one shard (and takes no locks), and more get about one shard each,
// up to defaultShardBits.
func ShardBitsFor(writers int) uint {
	return min(uint(bits.Len(uint(max(writers, 1)-1))), defaultShardBits)
}

// New returns an empty map.
func New(opts ...Option) *Map {
	m := &Map{k0: processK0, k1: processK1, shardBits: defaultShardBits, initCap: minCapacity, load8: loadEighths}
	for _, o := range opts {
		o(m)
	}
	m.shardMask = 1<<m.shardBits - 1
	m.hot = make([]atomic.Pointer[table], hotPositions<<m.shardBits)
	m.dir.Store(&directory{})
	return m
}

func (m *Map) hash(key uint64) uint64 { return keyhash.Hash(key, m.k0, m.k1) }

// shardOf picks the shard from the top bits of h; the bucket comes from the
// low bits (table.home).
func (m *Map) shardOf(l *level, h uint64) *shard {
	return &l.shards[(h>>(64-maxShardBits))&m.shardMask]
}

// hotTab returns where the table of hash h's shard at pos lives, for pos
// below hotPositions.
func (m *Map) hotTab(pos int, h uint64) *atomic.Pointer[table] {
	return hotAt(unsafe.Pointer(unsafe.SliceData(m.hot)), m.shardMask, pos, h)
}

// hotFrom returns where hotAt finds the table pointers of the positions
// from pos (< hotPositions; a larger pos gives the last one's), for a loop
// over them that keeps it and the shard mask in registers.
func (m *Map) hotFrom(pos int) unsafe.Pointer {
	return unsafe.Pointer(&m.hot[min(pos, hotPositions-1)])
}

// hotAt is hotTab(pos+i, h) from hot = m.hotFrom(pos) and smask =
// m.shardMask, with no bounds check: pos+i < hotPositions and a shard
// within the mask keep it inside m.hot.
func hotAt(hot unsafe.Pointer, smask uint64, i int, h uint64) *atomic.Pointer[table] {
	return (*atomic.Pointer[table])(unsafe.Add(hot, ((h>>(64-maxShardBits))&smask*hotPositions+uint64(i))*8))
}

// Put sets the value of key at pos; 0 deletes the key. It locks the key's
// shard: a shared writer (Writer).
func (m *Map) Put(pos int, key, val uint64) {
	var l locked
	m.lockInto(&l, pos, key)
	l.put(val)
	l.unlock()
}

// Delete deletes key at pos: Put(pos, key, 0).
func (m *Map) Delete(pos int, key uint64) { m.Put(pos, key, 0) }

// Or sets the bits of mask in the value of key at pos, inserting the key
// with value mask when it is absent, and returns the value before (0:
// absent). It locks the key's shard: a shared writer (Writer).
func (m *Map) Or(pos int, key, mask uint64) uint64 {
	w := m.Writer()
	return w.Or(pos, w.Key(key), mask, 0)
}

// Range calls f for each key with a value, in order of position, until f
// returns false. It reads each table as Get does: run beside writers, it
// may miss keys they write meanwhile and see some written after others it
// misses, and it must not run beside a writer that reuses tables (Epoch).
// Not for hot paths: it walks every table.
func (m *Map) Range(f func(pos int, key, val uint64) bool) {
	for pos, lv := range m.dir.Load().levels {
		for i := range lv.shards {
			t := lv.shards[i].tab.Load()
			if t == nil {
				continue
			}
			if v := t.zero.Load(); v != 0 && !f(pos, 0, v) {
				return
			}
			for j := uint64(0); j <= t.mask; j++ {
				k, v := atomic.LoadUint64(t.key(j)), atomic.LoadUint64(t.val(j))
				if k != 0 && v != 0 && !f(pos, k, v) {
					return
				}
			}
		}
	}
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
			if i < hotPositions && j <= int(m.shardMask) {
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
