package arena

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/flashindexer/flashindexer/internal/order"
	"github.com/flashindexer/flashindexer/internal/pages"
)

// Ref addresses a slot. Nil is no slot.
type Ref uint32

// Nil is the zero Ref.
const Nil Ref = 0

// Handle names one life of a slot: version << 32 | ref, of the version's
// low 31 bits, so that a handle's top bit is always 0 (a table value can
// tell a handle from an inline worker set by it: package entry). A stale
// handle would pass for a current one only if its slot were freed and
// reused 2^30 times while a reader held it. The zero Handle is nil.
type Handle uint64

// Ref returns the slot the handle names.
func (h Handle) Ref() Ref { return Ref(h) }

// Version returns the low 31 bits of the slot version the handle names.
func (h Handle) Version() uint32 { return uint32(h >> 32) }

// Names reports whether slot version v is the life h names: even (live)
// and the same in the bits a handle keeps.
func (h Handle) Names(v uint64) bool { return v&1 == 0 && handleVersion(v) == h.Version() }

// handleVersion is the part of a slot version a handle keeps.
func handleVersion(v uint64) uint32 { return uint32(v) & (1<<31 - 1) }

// handle is the handle of slot r's life of version v.
func handle(r Ref, v uint64) Handle { return Handle(uint64(handleVersion(v))<<32 | uint64(r)) }

// Slot word offsets.
const (
	WordVersion = 0
	WordSeq     = 1
	// Header is the number of words before the worker bits.
	Header = 2
)

const (
	// baseShift: the first slab holds 1<<10 slots, its parts 128: an empty
	// index costs a few KiB.
	baseShift = 10
	// numSlabs covers every uint32 ref: slab k holds 1<<(k+baseShift) slots.
	numSlabs = 32 - baseShift + 1
	// partShift: a slab is reserved in 1<<partShift equal parts, each when
	// the first slot in it is handed out, so the memory reserved and not
	// yet used stays under an eighth of what is used (whole slabs, doubling,
	// reserved up to twice it).
	partShift = 3
	// chunk is how many slots an Allocator reserves at a time: writers touch
	// the arena's mutex once per chunk.
	chunk = 256
	// poolThreshold: an allocator whose free list grows past this hands a
	// chunk of it to the shared pool, so slots freed by one writer are reused
	// by another and memory stays bounded whatever writer frees.
	poolThreshold = 4 * chunk
)

// Arena holds slots of a fixed stride.
type Arena struct {
	bitWords int
	stride   int
	parts    [numSlabs << partShift]atomic.Pointer[uint64] // slab k's part j at k<<partShift | j

	mu         sync.Mutex
	next       uint64  // next global slot index never handed out (under mu)
	partCount  int     // parts reserved, in order (under mu)
	reservedTo uint64  // global indexes below this are in reserved parts (under mu)
	pool       [][]Ref // free chunks handed back by allocators (under mu)
	spare      [][]Ref // emptied chunk buffers, reused by handbacks (under mu)
	allocators []*Allocator
	reserved   atomic.Uint64 // slots in reserved parts
	room       int           // live slots set aside by Reserve (under mu)
}

// New returns an arena whose slots carry a worker set of bitWords words.
func New(bitWords int) *Arena {
	if bitWords < 1 {
		bitWords = 1
	}
	return &Arena{bitWords: bitWords, stride: Header + bitWords}
}

// BitWords returns the words of the worker set of every slot.
func (a *Arena) BitWords() int { return a.bitWords }

// Stride returns the words per slot.
func (a *Arena) Stride() int { return a.stride }

// locate maps a ref to its part and the offset of its slot in that part.
// Global index g = r-1 is in slab k when (2^k - 1)·2^baseShift <= g <
// (2^(k+1) - 1)·2^baseShift.
//
// With x = g + 2^baseShift, slab k holds the x of bit length k+baseShift+1,
// and its parts hold 2^n slots, n = k+baseShift-partShift: x>>n is
// 2^partShift plus the part's number within the slab, and x's low n bits
// the slot's offset in the part.
func locate(r Ref) (part int, off uint64) {
	x := uint64(r) - 1 + 1<<baseShift
	n := bits.Len64(x) - 1 - partShift
	// k<<partShift + (x>>n - 2^partShift), with k = n - (baseShift-partShift)
	return (n-(baseShift-partShift+1))<<partShift + int(x>>n), x & (1<<n - 1)
}

// Slot returns the words of slot r. r must have been handed out by an
// Allocator of a. Readers touch the words only atomically.
func (a *Arena) Slot(r Ref) []uint64 {
	p, off := locate(r)
	base := a.parts[p].Load()
	return unsafe.Slice((*uint64)(unsafe.Add(unsafe.Pointer(base), off*uint64(a.stride)*8)), a.stride)
}

// Version loads a slot's version.
func Version(s []uint64) uint64 { return atomic.LoadUint64(&s[WordVersion]) }

// Seq loads a slot's sequence hash.
func Seq(s []uint64) uint64 { return atomic.LoadUint64(&s[WordSeq]) }

// Bits returns a slot's worker set words.
func Bits(s []uint64) []uint64 { return s[Header:] }

// Current reports whether slot s is still in the life h names: the reader's
// check before and after reading a slot.
func Current(s []uint64, h Handle) bool { return h.Names(Version(s)) }

// grow reserves parts until global index n exists. Called under a.mu.
func (a *Arena) grow(n uint64) {
	a.growTouched(n, false)
}

// growTouched is grow; with touch, the new parts' pages are mapped before
// they are published (pages.Touch).
func (a *Arena) growTouched(n uint64, touch bool) {
	for n >= a.reservedTo {
		if a.partCount >= len(a.parts) {
			panic("arena: out of refs")
		}
		slots := uint64(1) << (a.partCount>>partShift + baseShift - partShift)
		words := make([]uint64, slots*uint64(a.stride))
		if touch {
			pages.Touch(words)
		}
		a.parts[a.partCount].Store(&words[0])
		a.partCount++
		a.reservedTo += slots
		a.reserved.Add(slots)
	}
}

// Reserve sets room aside for n more live slots (n < 0 gives that much
// back): the arena makes, with their pages mapped, the parts that hold
// every slot the room counts, plus what the allocators may keep aside (a
// chunk being handed out and a free list each), so that as long as the
// live slots stay within the room no allocation grows the arena. A router
// that declares its workers' capacities (a worker's blocks bound the
// entries whose sets it moves to a slot) reserves it before the events
// come. Parts stay once made, as every part does; room given back is what
// later reservations count first.
func (a *Arena) Reserve(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.room = max(a.room+n, 0)
	if n <= 0 || a.room == 0 {
		return
	}
	slack := uint64(max(len(a.allocators), 1)) * (chunk + poolThreshold)
	a.growTouched(uint64(a.room)+slack-1, true)
}

// Stats describes an arena's memory.
type Stats struct {
	SlotBytes     int // bytes per slot
	ReservedSlots uint64
	LiveSlots     uint64
	FreeSlots     uint64 // reserved by allocators and not live: reusable
	ReservedBytes uint64
	LiveBytes     uint64
}

// Stats returns the arena's memory accounting. Counts read while allocators
// run are approximate.
func (a *Arena) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := Stats{SlotBytes: a.stride * 8, ReservedSlots: a.reserved.Load()}
	for _, al := range a.allocators {
		s.LiveSlots += atomic.LoadUint64(&al.live)
	}
	// Handed to allocators and not live: on free lists, in the shared pool,
	// or in an allocator's reserved chunk.
	s.FreeSlots = a.next - s.LiveSlots
	s.ReservedBytes = s.ReservedSlots * uint64(s.SlotBytes)
	s.LiveBytes = s.LiveSlots * uint64(s.SlotBytes)
	return s
}

// Allocator allocates and frees slots for one writer goroutine.
type Allocator struct {
	a        *Arena
	free     []Ref
	cur, end uint64 // bump range of global indexes
	// live counts the allocator's live slots. Its owner alone writes it
	// (order.Publish: no locked add on every allocation); Stats loads it.
	live uint64
}

// NewAllocator returns an allocator for one writer.
func (a *Arena) NewAllocator() *Allocator {
	al := &Allocator{a: a}
	a.mu.Lock()
	a.allocators = append(a.allocators, al)
	a.mu.Unlock()
	return al
}

func (al *Allocator) refill() {
	a := al.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := len(a.pool); n > 0 {
		al.free = append(al.free, a.pool[n-1]...)
		a.spare = append(a.spare, a.pool[n-1][:0])
		a.pool[n-1] = nil
		a.pool = a.pool[:n-1]
		return
	}
	a.grow(a.next + chunk - 1)
	al.cur, al.end = a.next, a.next+chunk
	a.next += chunk
}

// Alloc returns a live slot holding seq and an empty worker set.
func (al *Allocator) Alloc(seq uint64) Handle { return al.AllocWith(seq, -1) }

// AllocWith is Alloc with worker w (w >= 0) already in the slot's worker
// set.
//
// A fresh slot (version 0: never handed out) has no reader: none holds a
// handle to it, and its handle reaches readers only through a release store
// the caller makes (sync/atomic, order.Publish: a shard table's key or
// value), which orders the slot's words before it. So a
// fresh slot is written with plain stores, its version included, and costs
// no atomic operation; each would wait for every store before it to leave
// the store buffer. A reused slot (odd version: freed) may be read through
// stale handles: its words are written while the version is odd and the
// version is published last, with a release store. A reader that validates
// the old version after reading the words must not see a new word, so every
// word's store must be visible after the odd version's: plain stores keep
// that order on x86-64 (order.StoresInOrder); elsewhere they are atomic stores.
func (al *Allocator) AllocWith(seq uint64, w int) Handle {
	var r Ref
	if n := len(al.free); n > 0 {
		r = al.free[n-1]
		al.free = al.free[:n-1]
	} else {
		if al.cur == al.end {
			al.refill()
			if n := len(al.free); n > 0 {
				return al.AllocWith(seq, w)
			}
		}
		r = Ref(al.cur + 1)
		al.cur++
	}
	s := al.a.Slot(r)
	v := Version(s)
	if v == 0 {
		// Fresh: its words are zero (a new part) and no reader has it.
		order.Init(&s[WordSeq], seq)
		if w >= 0 {
			order.Init(&s[Header+w/64], 1<<(uint(w)%64))
		}
		order.Init(&s[WordVersion], 2)
		order.Publish(&al.live, al.live+1)
		return handle(r, 2)
	}
	ordered := !order.StoresInOrder
	setWord(&s[WordSeq], seq, ordered)
	for i := Header; i < len(s); i++ {
		// Entries are freed empty: this store is almost never needed.
		if atomic.LoadUint64(&s[i]) != 0 {
			setWord(&s[i], 0, ordered)
		}
	}
	if w >= 0 {
		setWord(&s[Header+w/64], 1<<(uint(w)%64), ordered)
	}
	v++
	order.Publish(&s[WordVersion], v)
	order.Publish(&al.live, al.live+1)
	return handle(r, v)
}

// setWord writes a word of a slot being allocated: with an atomic store
// when ordered, else with order.Init.
func setWord(p *uint64, v uint64, ordered bool) {
	if ordered {
		atomic.StoreUint64(p, v)
		return
	}
	order.Init(p, v)
}

// Free ends the life h names and makes the slot reusable. Readers holding h
// see the slot as stale from now on. Freeing a handle that is not current
// does nothing and reports false.
func (al *Allocator) Free(h Handle) bool {
	s := al.a.Slot(h.Ref())
	v := Version(s)
	if !h.Names(v) {
		return false
	}
	atomic.StoreUint64(&s[WordVersion], v+1)
	al.free = append(al.free, h.Ref())
	order.Publish(&al.live, al.live-1)
	if len(al.free) >= poolThreshold {
		a := al.a
		a.mu.Lock()
		var give []Ref
		if n := len(a.spare); n > 0 {
			give, a.spare = a.spare[n-1], a.spare[:n-1]
		}
		give = append(give, al.free[len(al.free)-chunk:]...)
		al.free = al.free[:len(al.free)-chunk]
		a.pool = append(a.pool, give)
		a.mu.Unlock()
	}
	return true
}
