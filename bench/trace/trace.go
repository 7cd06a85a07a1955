// Package trace loads a Mooncake-format request trace and turns it into
// engine blocks: trace block h becomes 512 pseudo-random tokens seeded by h,
// each request's tokens are cut to its input length and chunked at the
// engine block size, and local hashes are computed from the tokens exactly
// as a router computes them from a prompt.
//
// The Mooncake FAST'25 conversation trace is embedded (gzip; attribution and
// license in data/NOTICE).
package trace

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/flashindexer/flashindexer/flash"
)

//go:embed data/conversation_trace.jsonl.gz
var conversationGz []byte

// Request is one line of a trace.
type Request struct {
	Timestamp    int64    `json:"timestamp"` // ms from the start of the trace
	InputLength  int      `json:"input_length"`
	OutputLength int      `json:"output_length"`
	HashIDs      []uint64 `json:"hash_ids"`
}

// TraceBlockTokens is the number of tokens one trace hash id stands for.
const TraceBlockTokens = 512

// Load reads a trace: path "" is the embedded conversation trace; a path
// ending in .gz is decompressed.
func Load(path string) ([]Request, error) {
	var r io.Reader
	if path == "" {
		zr, err := gzip.NewReader(bytes.NewReader(conversationGz))
		if err != nil {
			return nil, err
		}
		r = zr
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
		if strings.HasSuffix(path, ".gz") {
			zr, err := gzip.NewReader(f)
			if err != nil {
				return nil, err
			}
			r = zr
		}
	}
	var reqs []Request
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var q Request
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return nil, fmt.Errorf("trace line %d: %w", line, err)
		}
		reqs = append(reqs, q)
	}
	return reqs, sc.Err()
}

// Scale returns the trace duplicated dup times (copy k has its hash ids
// offset past every id of the copies before it and the same timestamps, so
// the copies share no prefix and interleave) with every input stretched by
// length (whole trace blocks: each id repeated as new ids).
func Scale(reqs []Request, dup, length int) []Request {
	dup, length = max(1, dup), max(1, length)
	var maxID uint64
	for _, r := range reqs {
		for _, h := range r.HashIDs {
			maxID = max(maxID, h)
		}
	}
	span := (maxID + 1) * uint64(length)
	out := make([]Request, 0, len(reqs)*dup)
	for _, r := range reqs {
		for k := 0; k < dup; k++ {
			q := r
			q.InputLength = r.InputLength * length
			q.HashIDs = make([]uint64, 0, len(r.HashIDs)*length)
			for _, h := range r.HashIDs {
				for j := 0; j < length; j++ {
					q.HashIDs = append(q.HashIDs, uint64(k)*span+h*uint64(length)+uint64(j))
				}
			}
			out = append(out, q)
		}
	}
	return out
}

// Hasher turns requests into engine-block local hashes.
type Hasher struct {
	blockSize int
	th        *flash.TokenHasher
	// cache: a full trace block's sub-block hashes, at cache[id] in subs
	// (512/blockSize of them). Offsets, not slices: a map and an array
	// without pointers cost the garbage collector nothing to mark while a
	// replay keeps the hasher live.
	cache  map[uint64]int
	subs   []flash.LocalHash
	tokens []uint32
}

// NewHasher returns a hasher for an engine block size that divides 512.
func NewHasher(blockSize int) (*Hasher, error) {
	if blockSize < 1 || TraceBlockTokens%blockSize != 0 {
		return nil, fmt.Errorf("engine block size %d does not divide %d", blockSize, TraceBlockTokens)
	}
	return &Hasher{blockSize: blockSize, th: flash.NewTokenHasher(blockSize, ""), cache: map[uint64]int{}, tokens: make([]uint32, TraceBlockTokens)}, nil
}

// idTokens fills h.tokens with the deterministic tokens of trace block id.
func (h *Hasher) idTokens(id uint64) []uint32 {
	x := id*0x9E3779B97F4A7C15 + 0xD1B54A32D192ED03
	for i := range h.tokens {
		x ^= x >> 31
		x *= 0xBF58476D1CE4E5B9
		x ^= x >> 29
		h.tokens[i] = uint32(x>>32) % 151936 // a real vocabulary's size
		x += 0x9E3779B97F4A7C15
	}
	return h.tokens
}

// Locals appends the local hashes of r's full engine blocks to dst.
func (h *Hasher) Locals(dst []flash.LocalHash, r Request) []flash.LocalHash {
	left := r.InputLength
	for _, id := range r.HashIDs {
		if left <= 0 {
			break
		}
		if left >= TraceBlockTokens {
			off, ok := h.cache[id]
			if !ok {
				off = len(h.subs)
				h.subs = h.th.LocalHashes(h.subs, h.idTokens(id))
				h.cache[id] = off
			}
			dst = append(dst, h.subs[off:off+TraceBlockTokens/h.blockSize]...)
		} else {
			dst = h.th.LocalHashes(dst, h.idTokens(id)[:left])
		}
		left -= TraceBlockTokens
	}
	return dst
}

// Bursts returns reqs with a burst added every `every` ms of the trace: size
// requests, 1 ms apart, that share a prefix of prefix new blocks (one
// document or few-shot block that many users send at once) and end in a
// block of their own. They model a new shared prefix that reaches a router
// faster than the engines' events about it.
func Bursts(reqs []Request, every int64, size, prefix int) []Request {
	var maxID uint64
	var end int64
	for _, r := range reqs {
		for _, h := range r.HashIDs {
			maxID = max(maxID, h)
		}
		end = max(end, r.Timestamp)
	}
	out := append([]Request(nil), reqs...)
	next := maxID + 1
	for t := every; t <= end; t += every {
		shared := make([]uint64, prefix)
		for i := range shared {
			shared[i], next = next, next+1
		}
		for k := range size {
			ids := append(append(make([]uint64, 0, prefix+1), shared...), next)
			next++
			out = append(out, Request{Timestamp: t + int64(k), InputLength: (prefix + 1) * TraceBlockTokens, OutputLength: 200, HashIDs: ids})
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Timestamp < out[b].Timestamp })
	return out
}
