package shardmap

import "unsafe"

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
