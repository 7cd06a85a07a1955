package shardmap

import "testing"

// Shards per position follow the writers: none to split for one, about
// one per writer for more, at most eight.
func TestShardBitsFor(t *testing.T) {
	for lanes, want := range map[int]uint{0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 8: 3, 64: 3} {
		if got := ShardBitsFor(lanes); got != want {
			t.Errorf("ShardBitsFor(%d) = %d, want %d", lanes, got, want)
		}
	}
}
