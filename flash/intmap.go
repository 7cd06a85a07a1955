package flash

import (
	"unsafe"

	"github.com/flashindexer/flashindexer/asm"
	"github.com/flashindexer/flashindexer/shardmap"
)

// intMap is a writer-private open-addressed map from uint64 keys to uint32
// values, used for a worker's private state (external hash → node, sequence
// hash → node). It is not safe for concurrent use. Linear probing with
// backward-shift deletion keeps it free of tombstones, so its memory follows
// its live keys. Keys are placed by a keyed hash: sequence hashes derive from
// user prompts.
type intMap struct {
	slots []imSlot // key and value side by side
	// ctrl has a byte per slot: 0 when empty, else the tag of its key's
	// hash. A probe scans ctrl and reads a slot only on a matching tag, so
	// a miss (every new block's validation) touches one line of ctrl, 16
	// times denser than the slots and so far likelier in cache.
	ctrl   []uint8
	mask   uint64
	n      int
	hasZ   bool // key 0 lives outside the table
	zv     uint32
	k0, k1 uint64
}

type imSlot struct {
	key uint64
	val uint32
}

// intMapMinCap: 8 slots; a worker that stores one short prompt stays small.
const intMapMinCap = 8

// intMapShrinkAbove: tables up to 1024 slots (12 KiB) keep their size.
const intMapShrinkAbove = 1024

func (m *intMap) init(k0, k1 uint64) {
	m.k0, m.k1 = k0, k1|1
	m.alloc(intMapMinCap)
}

func (m *intMap) alloc(c int) {
	// One allocation: c slots, then c control bytes in c/16 more slots
	// (c is a power of two from 8, so c/16 rounds up to 1 at the least).
	mem := make([]imSlot, c+(c+15)/16)
	m.slots = mem[:c:c]
	m.ctrl = unsafe.Slice((*uint8)(unsafe.Pointer(&mem[c])), c)
	m.mask = uint64(c - 1)
}

// hash is the shardmap's keyed hash: its low bits place a key, its top 7
// bits are its tag.
func (m *intMap) hash(k uint64) uint64 { return shardmap.Hash(k, m.k0, m.k1) }

func tagOf(h uint64) uint8 { return uint8(h>>57) + 1 }

// slot places k.
func (m *intMap) slot(k uint64) uint64 { return m.hash(k) & m.mask }

func (m *intMap) len() int { return m.n }

func (m *intMap) get(k uint64) (uint32, bool) {
	if k == 0 {
		return m.zv, m.hasZ
	}
	if i, _, ok := m.find(k); ok {
		return m.slots[i].val, true
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
	if (m.n+1)*4 > len(m.slots)*3 {
		m.grow(2 * len(m.slots))
	}
	i, tag, ok := m.find(k)
	if ok {
		m.slots[i].val = v
		return
	}
	m.ctrl[i] = tag
	m.slots[i] = imSlot{key: k, val: v}
	m.n++
}

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
			if m.slots[i].key == k {
				return i, tag, true
			}
		}
	}
}

func (m *intMap) grow(c int) {
	old, oldCtrl := m.slots, m.ctrl
	m.alloc(c)
	for i, tag := range oldCtrl {
		if tag == 0 {
			continue
		}
		j := m.slot(old[i].key)
		for m.ctrl[j] != 0 {
			j = (j + 1) & m.mask
		}
		m.ctrl[j] = tag
		m.slots[j] = old[i]
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
		home := m.slot(m.slots[j].key)
		if (j-home)&m.mask >= (j-i)&m.mask {
			m.slots[i], m.ctrl[i] = m.slots[j], m.ctrl[j]
			i = j
		}
	}
	m.slots[i], m.ctrl[i] = imSlot{}, 0
	// Shrink only large, mostly empty maps, and by enough that a worker
	// whose cache fills and drains in cycles does not reallocate each time.
	if len(m.slots) > intMapShrinkAbove && m.n*16 < len(m.slots) {
		m.grow(len(m.slots) / 4)
	}
}

// reset empties the map, keeping its memory when it is small.
func (m *intMap) reset() {
	m.n, m.hasZ = 0, false
	if len(m.slots) > 1024 {
		m.alloc(intMapMinCap)
		return
	}
	clear(m.slots)
	clear(m.ctrl)
}

// each calls f for every key and value.
func (m *intMap) each(f func(k uint64, v uint32)) {
	if m.hasZ {
		f(0, m.zv)
	}
	for i, tag := range m.ctrl {
		if tag != 0 {
			f(m.slots[i].key, m.slots[i].val)
		}
	}
}

// prefetch asks the CPU for the control byte and the slot where k is probed
// first.
func (m *intMap) prefetch(k uint64) {
	i := uintptr(m.slot(k))
	asm.Prefetch(uintptr(unsafe.Pointer(unsafe.SliceData(m.ctrl))) + i)
	asm.Prefetch(uintptr(unsafe.Pointer(unsafe.SliceData(m.slots))) + i*unsafe.Sizeof(imSlot{}))
}
