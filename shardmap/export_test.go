package shardmap

import (
	"fmt"
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/keyhash"
)

// Degenerate makes every key hash alike: one shard, one probe cluster.
func Degenerate(m *Map) { m.k1 = 0 }

// Probes returns how many slots a lookup of key at pos inspects.
func Probes(m *Map, pos int, key uint64) int {
	d := m.dir.Load()
	if pos >= len(d.levels) {
		return 0
	}
	h := m.hash(key)
	t := m.shardOf(d.levels[pos], h).tab.Load()
	if t == nil || key == 0 {
		return 1
	}
	n := 0
	for i := t.home(h) * bucketSlots; ; i = (i + 1) & t.mask {
		k := *t.key(i)
		if i%bucketSlots == 0 {
			n++ // a probe reads a whole bucket
		}
		if k == key || k == 0 {
			return n
		}
	}
}

// PrefetchAddrs returns the addresses PrefetchTable and PrefetchBucket ask
// for (0: none), and where they should point: the header of the table that
// holds key at pos, and the line of key's slot when its lookup reads one
// bucket (else 0).
func PrefetchAddrs(m *Map, pos int, key uint64) (table, bucket, wantTable, wantBucket uintptr) {
	if t := m.hotTable(pos, m.hash(key)); t != nil {
		table = uintptr(unsafe.Pointer(t))
	}
	bucket = BucketAddr(m, pos, m.SoleWriter().Key(key))
	d := m.dir.Load()
	if pos >= len(d.levels) {
		return
	}
	h := m.hash(key)
	t := m.shardOf(d.levels[pos], h).tab.Load()
	if t == nil {
		return
	}
	wantTable = uintptr(unsafe.Pointer(t))
	if i, ok := t.find(key, h); ok && Probes(m, pos, key) == 1 {
		wantBucket = uintptr(unsafe.Pointer(t.key(i))) &^ 63
	}
	return
}

// ShardSize and LevelTabsSize are the sizes of a shard (padded to a line)
// and of a level's read side (its table pointers, one line).
var ShardSize, LevelTabsSize = unsafe.Sizeof(shard{}), unsafe.Sizeof(level{}.tabs)

// TableSize is a table header's size; TableUsed is where its writer's
// counts begin.
var TableSize, TableUsed = unsafe.Sizeof(table{}), unsafe.Offsetof(table{}.used)

// TableAddr is the address of the header of the table that holds key at
// pos (0: none, or pos past the inline positions), for the alignment of
// headers.
func TableAddr(m *Map, pos int, key uint64) uintptr {
	return uintptr(unsafe.Pointer(m.hotTable(pos, m.hash(key))))
}

// WithSecret gives m the hash secret (k0, k1|1) in place of the process's.
func WithSecret(m *Map, k0, k1 uint64) *Map {
	m.k0, m.k1 = k0, k1|1
	return m
}

// TableOf names the table that holds key at pos now.
func TableOf(m *Map, pos int, key uint64) uintptr {
	return uintptr(unsafe.Pointer(m.shardOf(m.level(pos), m.hash(key)).tab.Load()))
}

// CheckBuckets returns an error when a bucket of one of m's tables holds a
// key after an empty slot: find relies on every bucket's keys filling a
// prefix of its slots.
func CheckBuckets(m *Map) error {
	for pos, lv := range m.dir.Load().levels {
		for i := range lv.shards {
			t := lv.shards[i].tab.Load()
			if t == nil {
				continue
			}
			for s := uint64(0); s <= t.mask; s++ {
				if s%bucketSlots != 0 && *t.key(s) != 0 && *t.key(s - 1) == 0 {
					return fmt.Errorf("position %d, shard %d: slot %d holds a key after an empty slot", pos, i, s)
				}
			}
		}
	}
	return nil
}

// WithCapacity presizes every new table for n keys.
var WithCapacity = withCapacity

// ReserveWords is the words of table memory Reserve sets aside per key.
const ReserveWords = reserveWords

// SolePut is a sole writer's Update of key at pos to val.
func SolePut(m *Map, pos int, key, val uint64) {
	w := m.SoleWriter()
	w.Update(pos, w.Key(key), func(uint64) uint64 { return val })
}

// SoleOr is a sole writer's Or of mask into key at pos.
func SoleOr(m *Map, pos int, key, mask uint64) uint64 {
	w := m.SoleWriter()
	return w.Or(pos, w.Key(key), mask, 0)
}

// BucketAddrs is bucketAddrs: the address of the bucket where each of
// keys (keys[i] at pos+i) is probed first, what Writer.PrefetchBuckets asks
// for (0: none).
func BucketAddrs(m *Map, pos int, keys []keyhash.Key, addrs []uintptr) {
	m.bucketAddrs(pos, keys, addrs)
}

// BucketAddr is BucketAddrs of one key.
func BucketAddr(m *Map, pos int, k keyhash.Key) uintptr {
	var a [1]uintptr
	m.bucketAddrs(pos, []keyhash.Key{k}, a[:])
	return a[0]
}
