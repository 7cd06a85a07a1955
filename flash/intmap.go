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
	slots  []imSlot // key and value side by side: a lookup touches one line
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
	m.slots = make([]imSlot, c)
	m.mask = uint64(c - 1)
}

// slot places k by the shardmap's keyed hash.
func (m *intMap) slot(k uint64) uint64 { return shardmap.Hash(k, m.k0, m.k1) & m.mask }

func (m *intMap) len() int { return m.n }

func (m *intMap) get(k uint64) (uint32, bool) {
	if k == 0 {
		return m.zv, m.hasZ
	}
	for i := m.slot(k); ; i = (i + 1) & m.mask {
		switch e := &m.slots[i]; e.key {
		case k:
			return e.val, true
		case 0:
			return 0, false
		}
	}
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
	for i := m.slot(k); ; i = (i + 1) & m.mask {
		switch e := &m.slots[i]; e.key {
		case k:
			e.val = v
			return
		case 0:
			e.key, e.val = k, v
			m.n++
			return
		}
	}
}

func (m *intMap) grow(c int) {
	old := m.slots
	m.alloc(c)
	for _, e := range old {
		if e.key == 0 {
			continue
		}
		j := m.slot(e.key)
		for m.slots[j].key != 0 {
			j = (j + 1) & m.mask
		}
		m.slots[j] = e
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
	i := m.slot(k)
	for m.slots[i].key != k {
		if m.slots[i].key == 0 {
			return
		}
		i = (i + 1) & m.mask
	}
	m.n--
	// Backward-shift: move later members of the cluster into the hole when
	// their home slot does not lie cyclically in (hole, their slot].
	for j := (i + 1) & m.mask; m.slots[j].key != 0; j = (j + 1) & m.mask {
		home := m.slot(m.slots[j].key)
		if (j-home)&m.mask >= (j-i)&m.mask {
			m.slots[i] = m.slots[j]
			i = j
		}
	}
	m.slots[i] = imSlot{}
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
}

// each calls f for every key and value.
func (m *intMap) each(f func(k uint64, v uint32)) {
	if m.hasZ {
		f(0, m.zv)
	}
	for _, e := range m.slots {
		if e.key != 0 {
			f(e.key, e.val)
		}
	}
}

// prefetch asks the CPU for the slot where k is probed first.
func (m *intMap) prefetch(k uint64) {
	asm.Prefetch(uintptr(unsafe.Pointer(unsafe.SliceData(m.slots))) + uintptr(m.slot(k))*unsafe.Sizeof(imSlot{}))
}
