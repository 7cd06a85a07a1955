package flash_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/flashindexer/flashindexer/flash"
)

func TestHash_Vectors(t *testing.T) {
	if got := xxh3.HashStringSeed("test data", flash.Seed); got != 13226331709069118873 {
		t.Fatalf("XXH3(test data, 1337) = %d", got)
	}
	blocks := [][]uint32{{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}}
	want := []flash.LocalHash{14643705804678351452, 16777012769546811212, 483935686894639516}
	for i, b := range blocks {
		if got := flash.HashTokens(b, flash.Seed); got != want[i] {
			t.Errorf("HashTokens(%v) = %d, want %d", b, got, want[i])
		}
	}
	seq := flash.ChainLocals(nil, want)
	wantSeq := []flash.SeqHash{14643705804678351452, 4945711292740353085, 12583592247330656132}
	for i := range wantSeq {
		if seq[i] != wantSeq[i] {
			t.Errorf("seq[%d] = %d, want %d", i, seq[i], wantSeq[i])
		}
	}
	if got := flash.Chain(seq[0], want[1]); got != wantSeq[1] {
		t.Errorf("Chain = %d, want %d", got, wantSeq[1])
	}
}

func TestTokenHasher_QueryAndPartialBlock(t *testing.T) {
	h := flash.NewTokenHasher(4, "")
	tokens := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14} // 3 full blocks + 2 tokens
	var q flash.Query
	h.Query(&q, tokens)
	want := []flash.LocalHash{14643705804678351452, 16777012769546811212, 483935686894639516}
	if len(q.Locals) != 3 || len(q.Seqs) != 3 {
		t.Fatalf("got %d locals, %d seqs, want 3 and 3", len(q.Locals), len(q.Seqs))
	}
	for i := range want {
		if q.Locals[i] != want[i] {
			t.Errorf("local[%d] = %d, want %d", i, q.Locals[i], want[i])
		}
	}
	if q.Seqs[2] != 12583592247330656132 {
		t.Errorf("seq[2] = %d", q.Seqs[2])
	}
	if l := h.LocalHashes(nil, tokens[:3]); len(l) != 0 {
		t.Errorf("a partial block was hashed: %v", l)
	}
}

func TestTokenHasher_LoRASeed(t *testing.T) {
	name := "my-adapter"
	seed := flash.Seed + xxh3.HashString(name)
	if flash.LoRASeed(name) != seed || flash.LoRASeed("") != flash.Seed {
		t.Fatal("LoRASeed")
	}
	tokens := []uint32{1, 2, 3, 4}
	base := flash.NewTokenHasher(4, "").LocalHashes(nil, tokens)
	lora := flash.NewTokenHasher(4, name).LocalHashes(nil, tokens)
	if lora[0] != flash.HashTokens(tokens, seed) || lora[0] == base[0] {
		t.Fatalf("LoRA hash %d, base %d", lora[0], base[0])
	}
}

func TestTokenHasher_ZeroAllocs(t *testing.T) {
	h := flash.NewTokenHasher(16, "")
	tokens := make([]uint32, 16*64+5)
	for i := range tokens {
		tokens[i] = uint32(i)
	}
	var q flash.Query
	h.Query(&q, tokens)
	locals := make([]flash.LocalHash, 0, 64)
	if n := testing.AllocsPerRun(100, func() {
		h.Query(&q, tokens)
		locals = h.LocalHashes(locals[:0], tokens)
		_ = flash.Chain(1, 2)
		_ = flash.HashTokens(tokens[:16], flash.Seed)
	}); n != 0 {
		t.Fatalf("%v allocations per run, want 0", n)
	}
}

func TestScores_SortBest(t *testing.T) {
	var s flash.Scores
	s.Matches = append(s.Matches,
		flash.Match{Worker: flash.Worker{ID: 3}, Depth: 5, Blocks: 10},
		flash.Match{Worker: flash.Worker{ID: 1}, Depth: 7, Blocks: 20},
		flash.Match{Worker: flash.Worker{ID: 2}, Depth: 7, Blocks: 8})
	if b, ok := s.Best(); !ok || b.Worker.ID != 2 {
		t.Fatalf("Best = %+v", b)
	}
	s.Sort()
	if s.Matches[0].Worker.ID != 1 || s.Matches[1].Worker.ID != 2 || s.Matches[2].Worker.ID != 3 {
		t.Fatalf("Sort: %+v", s.Matches)
	}
	if s.Depth(flash.Worker{ID: 3}) != 5 || s.Depth(flash.Worker{ID: 9}) != 0 {
		t.Fatal("Depth")
	}
	s.Reset()
	if _, ok := s.Best(); ok {
		t.Fatal("Best of empty scores")
	}
}

func BenchmarkTokenHasher_Query(b *testing.B) {
	h := flash.NewTokenHasher(16, "")
	tokens := make([]uint32, 16*1024)
	var q flash.Query
	b.ReportAllocs()
	b.SetBytes(int64(4 * len(tokens)))
	for b.Loop() {
		h.Query(&q, tokens)
	}
	b.ReportMetric(float64(b.N)*1024/b.Elapsed().Seconds(), "blocks/s")
}

// Chain is XXH3-64 with Seed of the 16 bytes le64(prev) ‖ le64(local), as
// the library computes it, for any input.
func TestChain_IsXXH3(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for i := 0; i < 100000; i++ {
		prev, local := r.Uint64(), r.Uint64()
		switch i {
		case 0:
			prev, local = 0, 0
		case 1:
			prev, local = ^uint64(0), ^uint64(0)
		}
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:8], prev)
		binary.LittleEndian.PutUint64(b[8:], local)
		if got, want := flash.Chain(flash.SeqHash(prev), flash.LocalHash(local)), xxh3.HashSeed(b[:], flash.Seed); uint64(got) != want {
			t.Fatalf("Chain(%#x, %#x) = %#x, XXH3 %#x", prev, local, got, want)
		}
	}
}
