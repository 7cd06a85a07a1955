package flash

import "testing"

// Shards per position follow the lanes: none to split for one lane, about
// one per lane for more, at most eight.
func TestShardBits(t *testing.T) {
	for lanes, want := range map[int]uint{0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 8: 3, 64: 3} {
		if got := shardBits(lanes); got != want {
			t.Errorf("shardBits(%d) = %d, want %d", lanes, got, want)
		}
	}
}
