package worker

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/flashindexer/flashindexer/flash/internal/entry"
	"github.com/flashindexer/flashindexer/shardmap"
)

// The pool hands out each chunk once until it is put back, zeroed; a slab
// none of whose chunks is out is dropped; spare is the slabs' chunks not
// out; a chunk it did not make is left alone. Checked against a count of
// the chunks out, over random gets and puts.
func TestChunkPool_GetPut(t *testing.T) {
	var p chunkPool
	r := rand.New(rand.NewPCG(1, 2))
	out := map[*chunk]bool{}
	var held []*chunk
	size := int(unsafe.Sizeof(chunk{}))
	for step := range 20000 {
		if len(held) == 0 || r.IntN(5) < 3 {
			c := p.get()
			if out[c] {
				t.Fatalf("step %d: chunk %p handed out twice", step, c)
			}
			if *c != (chunk{}) {
				t.Fatalf("step %d: chunk %p not zero", step, c)
			}
			c[r.IntN(len(c))] = node{seq: 1, st: nodeLive}
			out[c] = true
			held = append(held, c)
		} else {
			j := r.IntN(len(held))
			c := held[j]
			held[j] = held[len(held)-1]
			held = held[:len(held)-1]
			delete(out, c)
			p.put(c)
		}
		if r.IntN(100) == 0 {
			p.put(new(chunk)) // not the pool's
		}
		if p.out != len(out) {
			t.Fatalf("step %d: %d out, want %d", step, p.out, len(out))
		}
		// Every slab alive holds a chunk out; the dropped ones are gone.
		slabs := map[*poolSlab]bool{}
		for c := range out {
			for _, s := range p.slabs {
				if a := uintptr(unsafe.Pointer(c)); a >= s.addr() && a < s.addr()+uintptr(poolSlabChunks*size) {
					slabs[s] = true
				}
			}
		}
		if len(slabs) != len(p.slabs) {
			t.Fatalf("step %d: %d slabs alive, %d hold a chunk out", step, len(p.slabs), len(slabs))
		}
		if want := (len(p.slabs)*poolSlabChunks - len(out)) * size; p.spare() != want {
			t.Fatalf("step %d: spare %d, want %d", step, p.spare(), want)
		}
		if 2*p.stale > len(p.open) && p.stale > 0 {
			t.Fatalf("step %d: %d of %d open slabs dropped", step, p.stale, len(p.open))
		}
	}
	for _, c := range held {
		p.put(c)
	}
	if len(p.slabs) != 0 || p.out != 0 || p.spare() != 0 {
		t.Fatalf("all back: %d slabs, %d out, %d spare", len(p.slabs), p.out, p.spare())
	}
}

// A wide index's workers take their chunks from the lane's pool and give
// them back when cleared past what they keep and when released; the
// slabs then go.
func TestChunkPool_Workers(t *testing.T) {
	sets := entry.New(1024, 16)
	o := &Owner{W: entry.Writer{Sets: &sets, Tabs: []shardmap.Writer{shardmap.New().SoleWriter()}, Excl: true}, K0: 1, K1: 3}
	var ws []*State
	for w := range 5 {
		s := o.New(uint64(w), 0, w)
		for i := range 1000 + 2000*w {
			s.newNode(node{seq: uint64(i + 1), pos: uint32(i)})
		}
		ws = append(ws, s)
	}
	size := int(unsafe.Sizeof(chunk{}))
	chunks := 0
	for _, s := range ws {
		chunks += len(s.chunks)
	}
	if o.pool.out != chunks || o.pool.spare() >= poolSlabChunks*size {
		t.Fatalf("%d chunks out, workers hold %d; spare %d", o.pool.out, chunks, o.pool.spare())
	}
	// Worker 4 (9,000 nodes) keeps 4,096 nodes' chunks when cleared.
	o.Clear(ws[4])
	if got := len(ws[4].chunks); got != 4096>>nodeChunkBits {
		t.Fatalf("cleared: %d chunks kept", got)
	}
	for _, s := range ws {
		o.Release(s)
	}
	if o.pool.out != 0 || len(o.pool.slabs) != 0 || o.pool.bytes() != 0 {
		t.Fatalf("all released: %d out, %d slabs, %d spare", o.pool.out, len(o.pool.slabs), o.pool.bytes())
	}
}
