package scaleout

import (
	"encoding/binary"
	"errors"
	"math/bits"

	"github.com/flashindexer/flashindexer/flash"
)

// ErrMalformed: a message that is not an event in this package's form.
var ErrMalformed = errors.New("scaleout: malformed event message")

const codecVersion = 1

// AppendEvent appends ev's binary form to dst: a version byte, the kind,
// the worker (ID and rank), the event ID, the parent (a flag and the hash),
// then the blocks (engine id and local hash each) and the removed hashes,
// counts as uvarints and hashes as little-endian words.
func AppendEvent(dst []byte, ev *flash.Event) []byte {
	dst = append(dst, codecVersion, byte(ev.Kind))
	dst = binary.AppendUvarint(dst, ev.Worker.ID)
	dst = binary.AppendUvarint(dst, uint64(ev.Worker.DPRank))
	dst = binary.AppendUvarint(dst, ev.ID)
	if ev.HasParent {
		dst = binary.LittleEndian.AppendUint64(append(dst, 1), uint64(ev.Parent))
	} else {
		dst = append(dst, 0)
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
	if d.byte() != codecVersion {
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
