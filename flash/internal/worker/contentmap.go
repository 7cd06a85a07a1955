package worker

import (
	"encoding/binary"
	"math/bits"

	"github.com/flashindexer/flashindexer/internal/keyhash"
)

// contentMap is a writer-private open-addressed map from contents
// (position, sequence hash) to uint32 values: a complex worker's content
// map (content → node), and the lane's map of predicted blocks. It is not
// safe for concurrent use. A key is the whole content, compared in full: a
// sequence hash at position 0 is the caller's local hash, so two contents
// whose mixed hashes collide are one XOR apart and must stay two. Linear
// probing with backward-shift deletion keeps it free of tombstones, so its
// memory follows its live keys. Keys are placed by a keyed hash: sequence
// hashes derive from user prompts.
type contentMap struct {
	// kv holds the slots packed, 16 bytes a slot (sequence hash, position,
	// value), read and written little-endian: one move each on amd64 and
	// arm64, aligned or not.
	kv []byte
	// ctrl has a byte per slot: 0 when empty, else the tag of its key's
	// hash. A probe scans ctrl and reads a key only on a matching tag, so
	// a miss (every new block's validation) touches one line of ctrl, 16
	// times denser than the slots and so far likelier in cache.
	ctrl   []uint8
	mask   uint64
	n      int
	k0, k1 uint64
}

// slotBytes is a slot's size: sequence hash, position and value.
const slotBytes = 16

// contentMapMinCap: 8 slots; a worker that stores one short prompt stays
// small.
const contentMapMinCap = 8

// contentMapShrinkAbove: tables up to 1024 slots (17 KiB) keep their size.
const contentMapShrinkAbove = 1024

func (m *contentMap) init(k0, k1 uint64) {
	m.k0, m.k1 = k0, k1|1
	m.alloc(contentMapMinCap)
}

func (m *contentMap) alloc(c int) {
	// One allocation: c packed slots, then c control bytes.
	mem := make([]byte, (slotBytes+1)*c)
	m.kv = mem[: slotBytes*c : slotBytes*c]
	m.ctrl = mem[slotBytes*c:]
	m.mask = uint64(c - 1)
}

// mix folds a content into one word for the keyed hash: the sequence hash
// mixed with the position, so that equal sequence hashes at two positions
// fall apart. Only placement uses it; keys compare in full.
func mix(pos uint32, seq uint64) uint64 {
	return seq ^ bits.RotateLeft64(uint64(pos)*0x9E3779B97F4A7C15, 17)
}

// hash is the shardmap's keyed hash of the mixed content: its low bits
// place a key, its top 7 bits are its tag.
func (m *contentMap) hash(pos uint32, seq uint64) uint64 {
	return keyhash.Hash(mix(pos, seq), m.k0, m.k1)
}

// seq, pos, val, set and setVal read and write slot i.
func (m *contentMap) seq(i uint64) uint64 { return binary.LittleEndian.Uint64(m.kv[slotBytes*i:]) }
func (m *contentMap) pos(i uint64) uint32 { return binary.LittleEndian.Uint32(m.kv[slotBytes*i+8:]) }
func (m *contentMap) val(i uint64) uint32 { return binary.LittleEndian.Uint32(m.kv[slotBytes*i+12:]) }
func (m *contentMap) set(i uint64, pos uint32, seq uint64, v uint32) {
	binary.LittleEndian.PutUint64(m.kv[slotBytes*i:], seq)
	binary.LittleEndian.PutUint32(m.kv[slotBytes*i+8:], pos)
	m.setVal(i, v)
}
func (m *contentMap) setVal(i uint64, v uint32) {
	binary.LittleEndian.PutUint32(m.kv[slotBytes*i+12:], v)
}

// cap is the number of slots.
func (m *contentMap) cap() int { return len(m.ctrl) }

func tagOf(h uint64) uint8 { return uint8(h>>57) + 1 }

func (m *contentMap) len() int { return m.n }

func (m *contentMap) get(pos uint32, seq uint64) (uint32, bool) {
	if i, _, ok := m.find(pos, seq); ok {
		return m.val(i), true
	}
	return 0, false
}

func (m *contentMap) put(pos uint32, seq uint64, v uint32) {
	if m.full() {
		m.grow(2 * m.cap())
	}
	i, tag, ok := m.find(pos, seq)
	if ok {
		m.setVal(i, v)
		return
	}
	m.ctrl[i] = tag
	m.set(i, pos, seq, v)
	m.n++
}

// full reports whether one more key would take the map past 3/4 load,
// where put grows it.
func (m *contentMap) full() bool { return (m.n+1)*4 > m.cap()*3 }

// find returns the slot of (pos, seq) and true, or the empty slot that
// ends its probe and false; and the key's tag.
func (m *contentMap) find(pos uint32, seq uint64) (uint64, uint8, bool) {
	h := m.hash(pos, seq)
	tag := tagOf(h)
	for i := h & m.mask; ; i = (i + 1) & m.mask {
		switch m.ctrl[i] {
		case 0:
			return i, tag, false
		case tag:
			if m.seq(i) == seq && m.pos(i) == pos {
				return i, tag, true
			}
		}
	}
}

func (m *contentMap) grow(c int) {
	old := *m
	m.alloc(c)
	for i, tag := range old.ctrl {
		if tag == 0 {
			continue
		}
		pos, seq := old.pos(uint64(i)), old.seq(uint64(i))
		j := m.hash(pos, seq) & m.mask
		for m.ctrl[j] != 0 {
			j = (j + 1) & m.mask
		}
		m.ctrl[j] = tag
		m.set(j, pos, seq, old.val(uint64(i)))
	}
}

func (m *contentMap) del(pos uint32, seq uint64) {
	i, _, ok := m.find(pos, seq)
	if !ok {
		return
	}
	m.n--
	// Backward-shift: move later members of the cluster into the hole when
	// their home slot does not lie cyclically in (hole, their slot].
	for j := (i + 1) & m.mask; m.ctrl[j] != 0; j = (j + 1) & m.mask {
		home := m.hash(m.pos(j), m.seq(j)) & m.mask
		if (j-home)&m.mask >= (j-i)&m.mask {
			m.set(i, m.pos(j), m.seq(j), m.val(j))
			m.ctrl[i] = m.ctrl[j]
			i = j
		}
	}
	m.ctrl[i] = 0 // a slot's key and value count only under a tag
	// Shrink only large, mostly empty maps, and by enough that a worker
	// whose cache fills and drains in cycles does not reallocate each time.
	if m.cap() > contentMapShrinkAbove && m.n*16 < m.cap() {
		m.grow(m.cap() / 4)
	}
}

// reset empties the map, keeping its memory when it is small.
func (m *contentMap) reset() {
	m.n = 0
	if m.cap() > contentMapShrinkAbove {
		m.alloc(contentMapMinCap)
		return
	}
	clear(m.ctrl) // slots count only under a tag
}

// each calls f for every key and value.
func (m *contentMap) each(f func(pos uint32, seq uint64, v uint32)) {
	for i, tag := range m.ctrl {
		if tag != 0 {
			f(m.pos(uint64(i)), m.seq(uint64(i)), m.val(uint64(i)))
		}
	}
}

// ContentMap is a writer-private map from contents (position, sequence
// hash), compared in full, to uint32 values, for the lane's predicted
// blocks: the content map of complex workers.
type ContentMap struct{ m contentMap }

// Init makes the map empty, its keys placed by the hash keyed (k0, k1).
func (c *ContentMap) Init(k0, k1 uint64) { c.m.init(k0, k1) }

// Get returns the value of content (pos, seq).
func (c *ContentMap) Get(pos uint32, seq uint64) (uint32, bool) { return c.m.get(pos, seq) }

// Put sets the value of content (pos, seq).
func (c *ContentMap) Put(pos uint32, seq uint64, v uint32) { c.m.put(pos, seq, v) }

// Del removes content (pos, seq).
func (c *ContentMap) Del(pos uint32, seq uint64) { c.m.del(pos, seq) }

// Reset empties the map, keeping its memory when it is small.
func (c *ContentMap) Reset() { c.m.reset() }

// Bytes is the memory the map holds.
func (c *ContentMap) Bytes() int { return len(c.m.kv) + len(c.m.ctrl) }

// Len is the number of contents in the map.
func (c *ContentMap) Len() int { return c.m.len() }
