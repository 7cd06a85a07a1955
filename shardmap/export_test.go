package shardmap

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
