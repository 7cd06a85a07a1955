package worker

import (
	"cmp"
	"math/bits"
	"slices"
	"unsafe"
)

// chunkPool is where a wide index's workers (more than 128 workers: many,
// and mostly small) get their node chunks, one at a time, so that each
// keeps less than a chunk past its nodes. A chunk made on its own is an
// allocation of 1 KiB for 32 nodes (at 256 workers, storing the trace from
// empty made 8,800 of them a fill); the pool cuts its chunks from slabs of
// poolSlabChunks, one allocation each, shared by the lane's workers
// (storing the trace from empty at 256, 1,024 and 4,096 workers: 5% less
// time).
//
// Chunks come back when a worker gives them up (Cleared past what it
// keeps, compaction, RemoveWorker: Owner.Release), are zeroed, and go to
// the next chunk the lane's workers need; a slab none of whose chunks is
// out is dropped, for the collector. So a slab lives while one of its
// chunks is in use, and the pool's memory is what its workers hold plus
// the free chunks of the slabs they hold a chunk of. Indexer.Memory counts
// the slabs whole, with the nodes (Owner.AddMemory).
type chunkPool struct {
	// slabs are the slabs alive, by address (their first chunk's), for
	// put to find a chunk's slab.
	slabs []*poolSlab
	// open are slabs with a chunk free, the next to hand out last; a slab
	// dropped or filled while on it is skipped.
	open  []*poolSlab
	stale int // dropped slabs on open
	out   int // chunks handed out
}

// poolSlabChunks: a slab is 16 chunks (16 KiB).
const poolSlabChunks = 16

type poolSlab struct {
	mem  *[poolSlabChunks]chunk
	out  uint16 // its chunks handed out, a bit each
	open bool   // on the open list
}

const slabFull = 1<<poolSlabChunks - 1

func (s *poolSlab) addr() uintptr { return uintptr(unsafe.Pointer(s.mem)) }

// get hands out a chunk of zero nodes.
func (p *chunkPool) get() *chunk {
	for len(p.open) > 0 {
		s := p.open[len(p.open)-1]
		if s.mem != nil && s.out != slabFull {
			j := bits.TrailingZeros16(^s.out)
			s.out |= 1 << j
			p.out++
			return &s.mem[j]
		}
		if s.mem == nil {
			p.stale--
		}
		s.open = false
		p.open = p.open[:len(p.open)-1]
	}
	s := &poolSlab{mem: new([poolSlabChunks]chunk), out: 1, open: true}
	i, _ := p.find(s.addr())
	p.slabs = slices.Insert(p.slabs, i, s)
	p.open = append(p.open, s)
	p.out++
	return &s.mem[0]
}

// find returns where a slab at address a is or goes in p.slabs, and
// whether one is there.
func (p *chunkPool) find(a uintptr) (int, bool) {
	return slices.BinarySearchFunc(p.slabs, a, func(x *poolSlab, a uintptr) int { return cmp.Compare(x.addr(), a) })
}

// slab returns the slab chunk c was cut from, and its index in p.slabs,
// or nil when the pool did not make c (a capacity hint's chunks, made in
// one allocation).
func (p *chunkPool) slab(c *chunk) (*poolSlab, int) {
	a := uintptr(unsafe.Pointer(c))
	i, found := p.find(a)
	if !found {
		i--
	}
	if i < 0 || a >= p.slabs[i].addr()+unsafe.Sizeof([poolSlabChunks]chunk{}) {
		return nil, 0
	}
	return p.slabs[i], i
}

// put takes back chunk c, which its worker no longer names; a chunk the
// pool did not make is left to the collector.
func (p *chunkPool) put(c *chunk) {
	s, i := p.slab(c)
	if s == nil {
		return
	}
	j := (uintptr(unsafe.Pointer(c)) - s.addr()) / unsafe.Sizeof(chunk{})
	if s.out&(1<<j) == 0 {
		return // given back already (a caller's bug; keep the pool sound)
	}
	*c = chunk{}
	s.out &^= 1 << j
	p.out--
	switch {
	case s.out == 0:
		// Dropped: its memory goes to the collector now, and the open
		// list forgets it once half of what it holds is dropped slabs.
		p.slabs = slices.Delete(p.slabs, i, i+1)
		s.mem = nil
		if s.open {
			if p.stale++; 2*p.stale > len(p.open) {
				p.open = slices.DeleteFunc(p.open, func(s *poolSlab) bool { return s.mem == nil })
				p.stale = 0
			}
		}
	case !s.open:
		s.open = true
		p.open = append(p.open, s)
	}
}

// spare returns the bytes of the pool's slabs not handed out.
func (p *chunkPool) spare() int {
	return (len(p.slabs)*poolSlabChunks - p.out) * int(unsafe.Sizeof(chunk{}))
}

// bytes returns the bytes of the pool's slabs.
func (p *chunkPool) bytes() int {
	return len(p.slabs) * int(unsafe.Sizeof([poolSlabChunks]chunk{}))
}

// putChunks gives chunks (ws's, which it no longer names) back to its
// pool, if it has one.
func (ws *State) putChunks(chunks []*chunk) {
	if ws.pool != nil {
		for _, c := range chunks {
			ws.pool.put(c)
		}
	}
}

// Release gives back what ws holds that outlives it: its node chunks, to
// the lane's pool. The lane calls it on a worker it drops, after Clear;
// ws is not used again.
func (o *Owner) Release(ws *State) {
	ws.putChunks(ws.chunks)
	clear(ws.chunks)
	ws.chunks, ws.n, ws.freed, ws.nfree = nil, 0, 0, 0
}

// AddMemory adds the lane's pool of node chunks to m: its slabs, whole,
// which hold its workers' chunks (State.AddMemory counts the others).
func (o *Owner) AddMemory(m *Memory) { m.Nodes += o.pool.bytes() }
