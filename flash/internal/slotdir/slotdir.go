// Package slotdir is the worker-slot directory: which worker holds each slot
// (a worker's bit in the shared entries), read lock-free by queries while
// writers give slots out and take them back.
//
// Contract:
//
//   - Take and Give MUST NOT run concurrently with each other (the caller
//     serializes them); any reader MAY run concurrently with both.
//   - The epoch is odd while a slot changes hands and even otherwise; each
//     change adds 2. A reader that finds it unchanged and even around its
//     work saw no slot change hands.
//   - A slot's since is the (odd) epoch at which its worker took it, stored
//     before the identity and live last; Owned reports a worker only if it
//     took its slot before a given epoch and still holds it, reading its
//     identity between two equal loads of since.
//
// In an index of T tiers each slot s has T places in the shared sets,
// s·T + c for tier cutoff c (the worker's blocks held in tier c or a
// faster one): the directory describes each place (Infos, Owned, Words),
// and gives out and takes back a slot's T together.
package slotdir

import (
	"sync/atomic"

	"github.com/flashindexer/flashindexer/bitset"
)

// Info describes the worker in one slot, for readers. Its since (in
// Table.since, apart so that the common query reads 24 bytes a worker) is
// the epoch at which the worker took the slot.
type Info struct {
	id     atomic.Uint64
	rank   atomic.Uint32
	live   atomic.Bool
	blocks atomic.Int64
}

// Table is the directory of n slots.
type Table struct {
	stride int // places per slot (tiers)
	epoch  atomic.Uint64
	// words is how many words of a worker set cover every slot given out
	// (at least 1): slots are given lowest first, so a fleet below its
	// bound searches sets of fewer words than the bound's.
	words atomic.Int32
	free  *bitset.Slots
	info  []Info
	since []atomic.Uint64
}

// New returns a directory of n free slots of stride places each (at least 1).
func New(n, stride int) *Table {
	stride = max(stride, 1)
	t := &Table{stride: stride, free: bitset.NewSlots(n), info: make([]Info, n*stride), since: make([]atomic.Uint64, n*stride)}
	t.words.Store(1)
	return t
}

// setWords recounts words, while the epoch is odd: a reader that read an
// even epoch before it reads Words, and the same epoch after its search,
// searched every slot given out (and a slot given out meanwhile moves the
// epoch).
func (t *Table) setWords() { t.words.Store(int32(max(1, bitset.Words(t.free.Top()*t.stride)))) }

// Words returns how many words of a worker set cover every place of a
// slot given out.
func (t *Table) Words() int { return int(t.words.Load()) }

// Take gives a free slot to worker (id, rank); ok is false when none is
// free.
func (t *Table) Take(id uint64, rank uint32) (slot int, ok bool) {
	slot, ok = t.free.Alloc()
	if !ok {
		return 0, false
	}
	e := t.epoch.Add(1) // odd: changing
	for p := slot * t.stride; p < (slot+1)*t.stride; p++ {
		in := &t.info[p]
		t.since[p].Store(e)
		in.id.Store(id)
		in.rank.Store(rank)
		in.blocks.Store(0)
		in.live.Store(true)
	}
	t.setWords()
	t.epoch.Add(1)
	return slot, true
}

// Give frees slot. Its worker's bits must be clear already.
func (t *Table) Give(slot int) {
	t.epoch.Add(1) // odd: changing
	for p := slot * t.stride; p < (slot+1)*t.stride; p++ {
		t.info[p].live.Store(false)
		t.info[p].blocks.Store(0)
	}
	t.free.Free(slot)
	t.setWords()
	t.epoch.Add(1)
}

// Len returns the number of slots, free or not.
func (t *Table) Len() int { return len(t.info) / t.stride }

// Stride returns the places of each slot.
func (t *Table) Stride() int { return t.stride }

// Used returns the number of slots given out.
func (t *Table) Used() int { return t.free.Used() }

// Epoch returns the directory's epoch.
func (t *Table) Epoch() uint64 { return t.epoch.Load() }

// SetBlocks records how many blocks slot's worker holds.
func (t *Table) SetBlocks(slot, n int) {
	for p := slot * t.stride; p < (slot+1)*t.stride; p++ {
		t.info[p].blocks.Store(int64(n))
	}
}

// Blocks returns how many blocks slot's worker holds.
func (t *Table) Blocks(slot int) int { return int(t.info[slot*t.stride].blocks.Load()) }

// Infos returns the places' descriptions, by place, for a reader's loop.
func (t *Table) Infos() []Info { return t.info }

// Live reports whether the slot is given out.
func (in *Info) Live() bool { return in.live.Load() }

// ID returns the slot's worker's ID.
func (in *Info) ID() uint64 { return in.id.Load() }

// Rank returns the slot's worker's DP rank.
func (in *Info) Rank() uint32 { return in.rank.Load() }

// Blocks returns how many blocks the slot's worker holds.
func (in *Info) Blocks() int { return int(in.blocks.Load()) }

// Owned returns the worker of place slot (a slot's, stride 1) and its
// block count, and reports whether that worker took the slot before epoch
// and held it throughout the reads.
func (t *Table) Owned(slot int, epoch uint64) (id uint64, rank uint32, blocks int, ok bool) {
	in, sinceOf := &t.info[slot], &t.since[slot]
	if !in.live.Load() {
		return 0, 0, 0, false
	}
	since := sinceOf.Load()
	if since >= epoch {
		return 0, 0, 0, false
	}
	id, rank, blocks = in.id.Load(), in.rank.Load(), int(in.blocks.Load())
	return id, rank, blocks, in.live.Load() && sinceOf.Load() == since
}
