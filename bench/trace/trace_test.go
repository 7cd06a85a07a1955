package trace

import (
	"slices"
	"testing"

	"github.com/flashindexer/flashindexer/flash"
)

func TestLoad_Embedded(t *testing.T) {
	reqs, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 12031 {
		t.Fatalf("%d requests, want 12,031", len(reqs))
	}
	refs := 0
	for _, r := range reqs {
		refs += len(r.HashIDs)
		if want := (r.InputLength + 511) / 512; len(r.HashIDs) != want {
			t.Fatalf("request with %d tokens has %d ids", r.InputLength, len(r.HashIDs))
		}
	}
	if refs != 288500 {
		t.Fatalf("%d id references, want 288,500", refs)
	}
}

func TestHasher_BlocksAndPrefixes(t *testing.T) {
	for _, bs := range []int{16, 64, 128, 512} {
		h, err := NewHasher(bs)
		if err != nil {
			t.Fatal(err)
		}
		a := Request{InputLength: 1200, HashIDs: []uint64{0, 1, 2}}
		b := Request{InputLength: 1024 + 100, HashIDs: []uint64{0, 1, 7}}
		la, lb := h.Locals(nil, a), h.Locals(nil, b)
		if len(la) != 1200/bs || len(lb) != 1124/bs {
			t.Fatalf("bs %d: %d and %d blocks", bs, len(la), len(lb))
		}
		shared := 1024 / bs
		for i := 0; i < shared; i++ {
			if la[i] != lb[i] {
				t.Fatalf("bs %d: shared prefix differs at %d", bs, i)
			}
		}
		if len(la) > shared && len(lb) > shared && la[shared] == lb[shared] {
			t.Fatalf("bs %d: different ids hash alike", bs)
		}
		// Local hashes are the router's: recomputing from tokens agrees.
		th := flash.NewTokenHasher(bs, "")
		if got := th.LocalHashes(nil, h.idTokens(0)); got[0] != la[0] {
			t.Fatal("hash differs from TokenHasher's")
		}
		// b's first two ids came from the cache: every sub-block as hashed afresh.
		want := th.LocalHashes(nil, h.idTokens(0))
		want = th.LocalHashes(want, h.idTokens(1))
		if !slices.Equal(want, lb[:shared]) {
			t.Fatalf("bs %d: cached sub-block hashes differ from fresh ones", bs)
		}
	}
	if _, err := NewHasher(100); err == nil {
		t.Fatal("block size 100 accepted")
	}
}

func TestScale(t *testing.T) {
	reqs := []Request{{InputLength: 1024, HashIDs: []uint64{0, 1}}, {InputLength: 600, HashIDs: []uint64{0, 2}}}
	s := Scale(reqs, 2, 3)
	if len(s) != 4 || len(s[0].HashIDs) != 6 || s[0].InputLength != 3072 {
		t.Fatalf("%+v", s)
	}
	if s[0].HashIDs[0] == s[1].HashIDs[0] {
		t.Fatal("copies share ids")
	}
	if s[0].HashIDs[0] != s[2].HashIDs[0] {
		t.Fatal("a copy lost the shared prefix of its requests")
	}
}

func TestBursts(t *testing.T) {
	reqs := []Request{{Timestamp: 0, HashIDs: []uint64{0, 1}}, {Timestamp: 25, HashIDs: []uint64{0, 2}}}
	out := Bursts(reqs, 10, 3, 4)
	if len(out) != 2+2*3 { // bursts at 10 and 20 ms
		t.Fatalf("%d requests, want 8", len(out))
	}
	byT := map[int64][]uint64{}
	for i, r := range out {
		if i > 0 && r.Timestamp < out[i-1].Timestamp {
			t.Fatal("not in time order")
		}
		if len(r.HashIDs) == 5 {
			if r.InputLength != 5*TraceBlockTokens {
				t.Fatalf("burst request of %d tokens", r.InputLength)
			}
			byT[r.Timestamp/10] = append(byT[r.Timestamp/10], r.HashIDs...)
		}
	}
	for burst, ids := range byT {
		seen := map[uint64]int{}
		for _, id := range ids {
			seen[id]++
			if id <= 2 {
				t.Fatalf("burst %d reuses trace id %d", burst, id)
			}
		}
		shared := 0
		for _, n := range seen {
			if n == 3 {
				shared++
			}
		}
		if len(ids) != 15 || shared != 4 || len(seen) != 7 {
			t.Fatalf("burst %d: ids %v", burst, ids)
		}
	}
}
