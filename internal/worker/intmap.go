package worker

import (
	"encoding/binary"

	"github.com/flashindexer/flashindexer/shardmap"
)

// intMap is a writer-private open-addressed map from uint64 keys to uint32
// values: a complex worker's content map ((position, sequence hash) → node). It is not safe for concurrent use. Linear probing with
// backward-shift deletion keeps it free of tombstones, so its memory follows
// its live keys. Keys are placed by a keyed hash: sequence hashes derive from
// user prompts.
type intMap struct {
	// kv holds the slots' keys and values packed, 12 bytes a slot (a key
	// and a value as a struct would pad to 16), read and written little-
	// endian: one move each on amd64 and arm64, aligned or not.
	kv []byte
	// ctrl has a byte per slot: 0 when empty, else the tag of its key's
	// hash. A probe scans ctrl and reads a key only on a matching tag, so
	// a miss (every new block's validation) touches one line of ctrl, 12
	// times denser than the slots and so far likelier in cache.
	ctrl   []uint8
	mask   uint64
	n      int
	hasZ   bool // key 0 lives outside the table
	zv     uint32
	k0, k1 uint64
}

// intMapMinCap: 8 slots; a worker that stores one short prompt stays small.
const intMapMinCap = 8

// intMapShrinkAbove: tables up to 1024 slots (13 KiB) keep their size.
const intMapShrinkAbove = 1024

func (m *intMap) init(k0, k1 uint64) {
	m.k0, m.k1 = k0, k1|1
	m.alloc(intMapMinCap)
}

func (m *intMap) alloc(c int) {
	// One allocation: c packed slots, then c control bytes.
	mem := make([]byte, 13*c)
	m.kv = mem[: 12*c : 12*c]
	m.ctrl = mem[12*c:]
	m.mask = uint64(c - 1)
}

// hash is the shardmap's keyed hash: its low bits place a key, its top 7
// bits are its tag.
func (m *intMap) hash(k uint64) uint64 { return shardmap.Hash(k, m.k0, m.k1) }

// key, val, set and setVal read and write slot i's key and value.
func (m *intMap) key(i uint64) uint64 { return binary.LittleEndian.Uint64(m.kv[12*i:]) }
func (m *intMap) val(i uint64) uint32 { return binary.LittleEndian.Uint32(m.kv[12*i+8:]) }
func (m *intMap) set(i, k uint64, v uint32) {
	binary.LittleEndian.PutUint64(m.kv[12*i:], k)
	m.setVal(i, v)
}
func (m *intMap) setVal(i uint64, v uint32) { binary.LittleEndian.PutUint32(m.kv[12*i+8:], v) }

// cap is the number of slots.
func (m *intMap) cap() int { return len(m.ctrl) }

func tagOf(h uint64) uint8 { return uint8(h>>57) + 1 }

// slot places k.
func (m *intMap) slot(k uint64) uint64 { return m.hash(k) & m.mask }

func (m *intMap) len() int { return m.n }

func (m *intMap) get(k uint64) (uint32, bool) {
	if k == 0 {
		return m.zv, m.hasZ
	}
	if i, _, ok := m.find(k); ok {
		return m.val(i), true
	}
	return 0, false
}

func (m *intMap) put(k uint64, v uint32) {
	if k == 0 {
		if !m.hasZ {
			m.n++
		}
		m.hasZ, m.zv = true, v
		return
	}
	if m.full() {
		m.grow(2 * m.cap())
	}
	i, tag, ok := m.find(k)
	if ok {
		m.setVal(i, v)
		return
	}
	m.ctrl[i] = tag
	m.set(i, k, v)
	m.n++
}

// full reports whether one more key would take the map past 3/4 load,
// where put grows it.
func (m *intMap) full() bool { return (m.n+1)*4 > m.cap()*3 }

// find returns the slot of k (not 0) and true, or the empty slot that ends
// its probe and false; and k's tag.
func (m *intMap) find(k uint64) (uint64, uint8, bool) {
	h := m.hash(k)
	tag := tagOf(h)
	for i := h & m.mask; ; i = (i + 1) & m.mask {
		switch m.ctrl[i] {
		case 0:
			return i, tag, false
		case tag:
			if m.key(i) == k {
				return i, tag, true
			}
		}
	}
}

func (m *intMap) grow(c int) {
	old := *m
	m.alloc(c)
	for i, tag := range old.ctrl {
		if tag == 0 {
			continue
		}
		k := old.key(uint64(i))
		j := m.slot(k)
		for m.ctrl[j] != 0 {
			j = (j + 1) & m.mask
		}
		m.ctrl[j] = tag
		m.set(j, k, old.val(uint64(i)))
	}
}

func (m *intMap) del(k uint64) {
	if k == 0 {
		if m.hasZ {
			m.n--
		}
		m.hasZ = false
		return
	}
	i, _, ok := m.find(k)
	if !ok {
		return
	}
	m.n--
	// Backward-shift: move later members of the cluster into the hole when
	// their home slot does not lie cyclically in (hole, their slot].
	for j := (i + 1) & m.mask; m.ctrl[j] != 0; j = (j + 1) & m.mask {
		home := m.slot(m.key(j))
		if (j-home)&m.mask >= (j-i)&m.mask {
			m.set(i, m.key(j), m.val(j))
			m.ctrl[i] = m.ctrl[j]
			i = j
		}
	}
	m.ctrl[i] = 0 // a slot's key and value count only under a tag
	// Shrink only large, mostly empty maps, and by enough that a worker
	// whose cache fills and drains in cycles does not reallocate each time.
	if m.cap() > intMapShrinkAbove && m.n*16 < m.cap() {
		m.grow(m.cap() / 4)
	}
}

// reset empties the map, keeping its memory when it is small.
func (m *intMap) reset() {
	m.n, m.hasZ = 0, false
	if m.cap() > intMapShrinkAbove {
		m.alloc(intMapMinCap)
		return
	}
	clear(m.ctrl) // slots count only under a tag
}

// each calls f for every key and value.
func (m *intMap) each(f func(k uint64, v uint32)) {
	if m.hasZ {
		f(0, m.zv)
	}
	for i, tag := range m.ctrl {
		if tag != 0 {
			f(m.key(uint64(i)), m.val(uint64(i)))
		}
	}
}

// ContentMap is a writer-private map from contents (ContentKey) to uint32
// values, for the lane's predicted blocks: the content map of complex
// workers.
type ContentMap struct{ m intMap }

// Init makes the map empty, its keys placed by the hash keyed (k0, k1).
func (c *ContentMap) Init(k0, k1 uint64) { c.m.init(k0, k1) }

// Get returns k's value.
func (c *ContentMap) Get(k uint64) (uint32, bool) { return c.m.get(k) }

// Put sets k's value.
func (c *ContentMap) Put(k uint64, v uint32) { c.m.put(k, v) }

// Del removes k.
func (c *ContentMap) Del(k uint64) { c.m.del(k) }

// Reset empties the map, keeping its memory when it is small.
func (c *ContentMap) Reset() { c.m.reset() }

// ContentKey is the map key of content (pos, seq).
func ContentKey(pos uint32, seq uint64) uint64 { return contentKey(pos, seq) }
