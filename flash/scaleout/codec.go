package scaleout

import (
	"encoding/binary"
	"errors"
	"math/bits"

	"github.com/flashindexer/flashindexer/flash"
)

// ErrMalformed: a message that is not an event in this package's form.
var ErrMalformed = errors.New("scaleout: malformed event message")

// The forms: one event, or a batch of events (one engine batch, one
// message). An event in the fastest tier with no TierOnly flag takes the
// first form of an event, which replicas from before tiers read; any
// other, the tiered form.
const (
	codecVersion  = 1
	batchVersion  = 2
	tieredVersion = 3
)

// tierOnlyBit marks TierOnly in the tiered form's tier byte.
const tierOnlyBit = 0x80

// AppendEvent appends ev's binary form to dst: a version byte, the kind,
// the worker (ID and rank), the event ID, the parent (a flag and the hash),
// in the tiered form the tier (a byte: the tier, and 0x80 for TierOnly),
// then the blocks (engine id and local hash each) and the removed hashes,
// counts as uvarints and hashes as little-endian words.
func AppendEvent(dst []byte, ev *flash.Event) []byte {
	tiered := ev.Tier != 0 || ev.TierOnly
	version := byte(codecVersion)
	if tiered {
		version = tieredVersion
	}
	dst = append(dst, version, byte(ev.Kind))
	dst = binary.AppendUvarint(dst, ev.Worker.ID)
	dst = binary.AppendUvarint(dst, uint64(ev.Worker.DPRank))
	dst = binary.AppendUvarint(dst, ev.ID)
	if ev.HasParent {
		dst = binary.LittleEndian.AppendUint64(append(dst, 1), uint64(ev.Parent))
	} else {
		dst = append(dst, 0)
	}
	if tiered {
		t := byte(ev.Tier) &^ tierOnlyBit
		if ev.TierOnly {
			t |= tierOnlyBit
		}
		dst = append(dst, t)
	}
	dst = binary.AppendUvarint(dst, uint64(len(ev.Blocks)))
	for _, b := range ev.Blocks {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(b.Hash))
		dst = binary.LittleEndian.AppendUint64(dst, uint64(b.Local))
	}
	dst = binary.AppendUvarint(dst, uint64(len(ev.Hashes)))
	for _, h := range ev.Hashes {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(h))
	}
	return dst
}

// DecodeEvent reads an event written by AppendEvent into ev, reusing the
// capacity of its Blocks and Hashes. It returns ErrMalformed for anything
// else (a count in a longer form than the shortest too: an event has one
// encoding), ev's contents then undefined.
func DecodeEvent(b []byte, ev *flash.Event) error {
	d := decoder{b: b}
	version := d.byte()
	if version != codecVersion && version != tieredVersion {
		return ErrMalformed
	}
	ev.Kind = flash.EventKind(d.byte())
	ev.Worker.ID = d.uvarint()
	rank := d.uvarint()
	ev.Worker.DPRank = uint32(rank)
	ev.ID = d.uvarint()
	switch d.byte() {
	case 0:
		ev.HasParent, ev.Parent = false, 0
	case 1:
		ev.HasParent, ev.Parent = true, flash.ExternalHash(d.word())
	default:
		d.bad = true
	}
	ev.Tier, ev.TierOnly = 0, false
	if version == tieredVersion {
		t := d.byte()
		ev.Tier, ev.TierOnly = flash.Tier(t&^tierOnlyBit), t&tierOnlyBit != 0
		if t == 0 || t&^tierOnlyBit >= flash.MaxTiers {
			d.bad = true // the first form's event, or no tier there is
		}
	}
	n := d.count(16)
	ev.Blocks = ev.Blocks[:0]
	for range n {
		ev.Blocks = append(ev.Blocks, flash.Block{Hash: flash.ExternalHash(d.word()), Local: flash.LocalHash(d.word())})
	}
	n = d.count(8)
	ev.Hashes = ev.Hashes[:0]
	for range n {
		ev.Hashes = append(ev.Hashes, flash.ExternalHash(d.word()))
	}
	if d.bad || len(d.b) != 0 || rank > 1<<32-1 {
		return ErrMalformed
	}
	return nil
}

type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.bad = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// uvarint reads a uvarint in its shortest form: an event has one
// encoding.
func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 || n != (bits.Len64(v|1)+6)/7 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) word() uint64 {
	if len(d.b) < 8 {
		d.bad = true
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

// count reads a count of items of size bytes each, no more than the bytes
// left can hold.
func (d *decoder) count(size int) int {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)/size) {
		d.bad = true
		return 0
	}
	return int(n)
}

// AppendBatch appends the binary form of a batch of events to dst: a
// version byte, the count, then each event as AppendEvent writes it.
func AppendBatch(dst []byte, evs []flash.Event) []byte {
	dst = binary.AppendUvarint(append(dst, batchVersion), uint64(len(evs)))
	for i := range evs {
		dst = AppendEvent(dst, &evs[i])
	}
	return dst
}

// DecodeBatch calls f with each event of a message in either form (one
// event, or a batch), decoded into ev, in order. It returns ErrMalformed,
// having called f for none of them, if any does not decode.
func DecodeBatch(b []byte, ev *flash.Event, f func(*flash.Event)) error {
	if len(b) > 0 && (b[0] == codecVersion || b[0] == tieredVersion) {
		if err := DecodeEvent(b, ev); err != nil {
			return err
		}
		f(ev)
		return nil
	}
	d := decoder{b: b}
	if d.byte() != batchVersion {
		return ErrMalformed
	}
	n := d.count(minEventSize)
	if d.bad {
		return ErrMalformed
	}
	// Decode every event first: a batch applies whole or not at all, so an
	// event that does not decode must be found before f sees any.
	rest := d.b
	for range n {
		size := eventSize(rest)
		if size <= 0 {
			return ErrMalformed
		}
		if err := DecodeEvent(rest[:size], ev); err != nil {
			return err
		}
		rest = rest[size:]
	}
	if len(rest) != 0 {
		return ErrMalformed
	}
	rest = d.b
	for range n {
		size := eventSize(rest)
		_ = DecodeEvent(rest[:size], ev) // decoded above
		f(ev)
		rest = rest[size:]
	}
	return nil
}

// minEventSize is the fewest bytes an event takes.
const minEventSize = 8

// eventSize returns the length of the event form b starts with, or 0.
func eventSize(b []byte) int {
	d := decoder{b: b}
	version := d.byte()
	if version != codecVersion && version != tieredVersion {
		return 0
	}
	d.byte()
	d.uvarint()
	d.uvarint()
	d.uvarint()
	if d.byte() == 1 {
		d.word()
	}
	if version == tieredVersion {
		d.byte()
	}
	d.b = d.b[min(len(d.b), 16*d.count(16)):]
	d.b = d.b[min(len(d.b), 8*d.count(8)):]
	if d.bad {
		return 0
	}
	return len(b) - len(d.b)
}
