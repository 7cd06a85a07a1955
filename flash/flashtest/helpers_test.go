package flashtest

import "testing"

// Seeds below 2^32 give prompts with no block in common; a larger seed,
// whose high bits Seqs would lose, panics instead of aliasing another.
func TestSeqs_SeedsStayApart(t *testing.T) {
	seen := map[uint64]uint64{}
	for _, seed := range []uint64{0, 1, 2, 1 << 20, 1<<32 - 1} {
		for _, l := range Seqs(seed, 64) {
			if other, ok := seen[uint64(l)]; ok {
				t.Fatalf("seeds %d and %d share a block", other, seed)
			}
			seen[uint64(l)] = seed
		}
	}
	for _, seed := range []uint64{1 << 32, 1 << 40, 3 << 40} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Seqs(%#x, 4) did not panic", seed)
				}
			}()
			Seqs(seed, 4)
		}()
	}
}
