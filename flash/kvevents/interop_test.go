package kvevents

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/model"
)

// python returns a Python 3 with pyzmq (on real libzmq) and msgpack, or
// skips: CI installs Debian's python3-zmq and python3-msgpack.
func python(t *testing.T) string {
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import zmq, msgpack").Run() == nil {
			return p
		}
	}
	t.Skip("no python3 with zmq and msgpack (Debian: python3-zmq python3-msgpack)")
	return ""
}

// interopHash is testdata/vllm_publisher.py's h(k, i) as the subscriber
// must read it.
func interopHash(k, i int) uint64 {
	v := uint64(k*10 + i + 1)
	if k%3 == 0 {
		return uint64(-int64(v))
	}
	return v
}

// The subscriber against libzmq and Python msgpack, speaking as vLLM's
// publisher does: signed, unsigned and bytes hashes, a trailing field from
// a newer engine, CPU-medium events (offloads, and an eviction from CPU
// memory) that reach the index's CPU tier, a medium it has no tier for
// (refused, counted), two DP ranks, and a batch never sent that only the
// ROUTER replay has.
func TestInterop_LibzmqPublisher(t *testing.T) {
	py := python(t)
	cmd := exec.Command(py, "testdata/vllm_publisher.py")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	var pubPort, replayPort int
	if _, err := fmt.Fscan(bufio.NewReader(stdout), &pubPort, &replayPort); err != nil {
		t.Fatal(err)
	}

	const batches, block = 20, 4
	tiers := flash.Config{BlockSize: block, Tiers: []flash.TierSpec{{Name: "GPU"}, {Name: "CPU"}}}
	m := model.New(tiers)
	wl := &workload{prompts: [][]uint32{nil, nil}} // one chain per rank
	for k := 0; k < batches; k++ {
		w := flash.Worker{ID: 3, DPRank: uint32(k % 2)}
		toks := make([]uint32, 3*block)
		for j := range toks {
			toks[j] = uint32(k*100 + j)
		}
		locals := flash.NewTokenHasher(block, "").LocalHashes(nil, toks)
		var blocks []flash.Block
		for i := range locals {
			blocks = append(blocks, flash.Block{Hash: flash.ExternalHash(interopHash(k, i)), Local: locals[i]})
		}
		ev := flash.StoredEvent(w, blocks...)
		if k >= 2 {
			ev = ev.WithParent(flash.ExternalHash(interopHash(k-2, 2)))
		}
		_ = m.Apply(ev)
		if k%4 == 3 {
			_ = m.Apply(flash.RemovedEvent(w, flash.ExternalHash(interopHash(k-2, 2))))
		}
		offloaded := flash.Block{Hash: flash.ExternalHash(interopHash(k, 9)), Local: flash.NewTokenHasher(block, "").LocalHashes(nil, []uint32{0, 1, 2, 3})[0]}
		if k%6 == 5 {
			_ = m.Apply(flash.StoredEvent(w, offloaded).InTier(1))
		}
		if k%12 == 5 && k >= 12 {
			_ = m.Apply(flash.RemovedEvent(w, flash.ExternalHash(interopHash(k-6, 9))).InTier(1))
		}
		wl.prompts[k%2] = append(wl.prompts[k%2], toks...)
	}
	wl.prompts = append(wl.prompts, []uint32{0, 1, 2, 3}) // the offloaded block
	for r := range wl.prompts {                           // every prefix of each chain, block by block
		for n := block; n < len(wl.prompts[r]); n += block {
			wl.prompts = append(wl.prompts, wl.prompts[r][:n])
		}
	}

	ix := flash.New(flash.WithConfig(tiers), flash.WithWriters(1))
	defer ix.Close()
	sub := New(ix, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), WithBackoff(5*time.Millisecond, 50*time.Millisecond))
	defer sub.Close()
	if err := sub.Subscribe(Endpoint{
		Addr:   fmt.Sprintf("tcp://127.0.0.1:%d", pubPort),
		Replay: fmt.Sprintf("tcp://127.0.0.1:%d", replayPort),
		Topic:  "kv", Worker: 3,
	}); err != nil {
		t.Fatal(err)
	}
	workers := []flash.Worker{{ID: 3}, {ID: 3, DPRank: 1}}
	eventually(t, 20*time.Second, "the index matches the model", func() string {
		// A replay counts itself after its last batch is applied.
		if st := sub.Stats(); st.Replays+st.ReplayFailures == 0 {
			return fmt.Sprintf("no replay finished: %+v", st)
		}
		ix.Flush()
		return compare(ix, m, wl, workers)
	})
	if matched(m, wl) == 0 {
		t.Fatal("no prompt matches: the comparison shows nothing")
	}
	st := sub.Stats()
	if st.Replays == 0 || st.UnknownMedium == 0 || st.Malformed != 0 || st.BadEvents != 0 || st.ApplyErrors != 0 {
		t.Fatalf("stats %+v", st)
	}
	// The CPU events reached the CPU tier: rank 1 holds the offloaded
	// block in CPU memory only, rank 0 (its batch 0) on the GPU.
	var q flash.Query
	var sc flash.Scores
	flash.NewTokenHasher(block, "").Query(&q, []uint32{0, 1, 2, 3})
	ix.FindMatches(q, &sc)
	sc.Sort()
	if len(sc.Matches) != 2 || sc.Matches[0].TierDepth != [flash.MaxTiers]int32{1, 1} || sc.Matches[1].Worker != workers[1] || sc.Matches[1].TierDepth != [flash.MaxTiers]int32{0, 1} {
		t.Fatalf("the offloaded block's matches %+v, want rank 0 on the GPU, rank 1 in CPU memory alone", sc.Matches)
	}
	t.Logf("subscriber: %+v", st)
	// The engine ids were read as the engine meant them: removing by the
	// id computed here removes a block, for each of the three encodings.
	before := ix.Stats()
	for _, k := range []int{18, 19, 17} { // signed, bytes, unsigned
		w := flash.Worker{ID: 3, DPRank: uint32(k % 2)}
		n := ix.BlockCount(w)
		if err := ix.Apply(flash.RemovedEvent(w, flash.ExternalHash(interopHash(k, 1)))); err != nil {
			t.Fatal(err)
		}
		ix.Flush()
		if got := ix.BlockCount(w); got != n-1 {
			t.Fatalf("batch %d: removing its middle block left %d blocks of %d", k, got, n)
		}
	}
	if s := ix.Stats(); s.RemovesUnknown != before.RemovesUnknown || s.BlocksRemoved != before.BlocksRemoved+3 {
		t.Fatalf("removes: unknown %d -> %d, removed %d -> %d", before.RemovesUnknown, s.RemovesUnknown, before.BlocksRemoved, s.BlocksRemoved)
	}
}
