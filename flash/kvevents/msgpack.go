package kvevents

import (
	"encoding/binary"
	"math"
)

// reader reads MessagePack values from a byte slice without allocating.
// Every method checks bounds; a short or ill-typed input is a *DecodeError.
type reader struct {
	b   []byte
	off int
}

// maxSkipDepth bounds the nesting of values skipped as unknown.
const maxSkipDepth = 32

func (r *reader) fail(what string) error {
	return &DecodeError{Offset: r.off, What: what}
}

func (r *reader) need(n int) bool { return n >= 0 && len(r.b)-r.off >= n }

func (r *reader) peek() (byte, bool) {
	if r.off >= len(r.b) {
		return 0, false
	}
	return r.b[r.off], true
}

// next returns the next n bytes.
func (r *reader) next(n int) ([]byte, bool) {
	if !r.need(n) {
		return nil, false
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p, true
}

// length reads an n-byte big-endian length.
func (r *reader) length(n int) (int, bool) {
	p, ok := r.next(n)
	if !ok {
		return 0, false
	}
	var v uint64
	switch n {
	case 1:
		v = uint64(p[0])
	case 2:
		v = uint64(binary.BigEndian.Uint16(p))
	case 4:
		v = uint64(binary.BigEndian.Uint32(p))
	}
	if v > uint64(len(r.b)) {
		return 0, false
	}
	return int(v), true
}

// nil consumes a nil if one is next and reports whether it did.
func (r *reader) nil() bool {
	if c, ok := r.peek(); ok && c == 0xc0 {
		r.off++
		return true
	}
	return false
}

// arrayLen reads an array header. The length is checked against the bytes
// left (every element takes at least one), so a forged length cannot make
// the caller allocate more than the input's size.
func (r *reader) arrayLen() (int, error) {
	c, ok := r.peek()
	if !ok {
		return 0, r.fail("array: end of input")
	}
	var n int
	switch {
	case c >= 0x90 && c <= 0x9f:
		r.off++
		n = int(c & 0x0f)
	case c == 0xdc:
		r.off++
		n, ok = r.length(2)
	case c == 0xdd:
		r.off++
		n, ok = r.length(4)
	default:
		return 0, r.fail("array expected")
	}
	if !ok || n > len(r.b)-r.off {
		return 0, r.fail("array: bad length")
	}
	return n, nil
}

// bytes reads a str or bin value; the result aliases the input.
func (r *reader) bytes() ([]byte, error) {
	c, ok := r.peek()
	if !ok {
		return nil, r.fail("string: end of input")
	}
	r.off++
	var n int
	switch {
	case c >= 0xa0 && c <= 0xbf:
		n = int(c & 0x1f)
	case c == 0xd9 || c == 0xc4:
		n, ok = r.length(1)
	case c == 0xda || c == 0xc5:
		n, ok = r.length(2)
	case c == 0xdb || c == 0xc6:
		n, ok = r.length(4)
	default:
		r.off--
		return nil, r.fail("string or bytes expected")
	}
	if !ok {
		return nil, r.fail("string: bad length")
	}
	p, ok := r.next(n)
	if !ok {
		return nil, r.fail("string: end of input")
	}
	return p, nil
}

// integer reads any MessagePack integer as its 64 bits: unsigned values as
// they are, negative ones in two's complement. neg reports a negative value.
func (r *reader) integer() (v uint64, neg bool, err error) {
	c, ok := r.peek()
	if !ok {
		return 0, false, r.fail("integer: end of input")
	}
	switch {
	case c <= 0x7f:
		r.off++
		return uint64(c), false, nil
	case c >= 0xe0:
		r.off++
		return uint64(int64(int8(c))), true, nil
	}
	size := 0
	signed := false
	switch c {
	case 0xcc, 0xcd, 0xce, 0xcf:
		size = 1 << (c - 0xcc)
	case 0xd0, 0xd1, 0xd2, 0xd3:
		size, signed = 1<<(c-0xd0), true
	default:
		return 0, false, r.fail("integer expected")
	}
	r.off++
	p, ok := r.next(size)
	if !ok {
		return 0, false, r.fail("integer: end of input")
	}
	switch size {
	case 1:
		v = uint64(p[0])
		if signed {
			v = uint64(int64(int8(p[0])))
		}
	case 2:
		v = uint64(binary.BigEndian.Uint16(p))
		if signed {
			v = uint64(int64(int16(v)))
		}
	case 4:
		v = uint64(binary.BigEndian.Uint32(p))
		if signed {
			v = uint64(int64(int32(v)))
		}
	case 8:
		v = binary.BigEndian.Uint64(p)
	}
	return v, signed && int64(v) < 0, nil
}

// hash reads a block hash: an integer (its 64 bits) or bytes (the low 64
// bits: the last 8 bytes, big-endian; shorter ones zero-extended).
func (r *reader) hash() (uint64, error) {
	c, ok := r.peek()
	if !ok {
		return 0, r.fail("hash: end of input")
	}
	if (c >= 0xa0 && c <= 0xbf) || (c >= 0xc4 && c <= 0xc6) || (c >= 0xd9 && c <= 0xdb) {
		p, err := r.bytes()
		if err != nil {
			return 0, err
		}
		if len(p) > 8 {
			p = p[len(p)-8:]
		}
		var v uint64
		for _, b := range p {
			v = v<<8 | uint64(b)
		}
		return v, nil
	}
	v, _, err := r.integer()
	return v, err
}

// float reads a float32, float64 or integer as a float64.
func (r *reader) float() (float64, error) {
	c, ok := r.peek()
	if !ok {
		return 0, r.fail("float: end of input")
	}
	switch c {
	case 0xca:
		r.off++
		p, ok := r.next(4)
		if !ok {
			return 0, r.fail("float: end of input")
		}
		return float64(math.Float32frombits(binary.BigEndian.Uint32(p))), nil
	case 0xcb:
		r.off++
		p, ok := r.next(8)
		if !ok {
			return 0, r.fail("float: end of input")
		}
		return math.Float64frombits(binary.BigEndian.Uint64(p)), nil
	}
	v, neg, err := r.integer()
	if err != nil {
		return 0, r.fail("number expected")
	}
	if neg {
		return float64(int64(v)), nil
	}
	return float64(v), nil
}

// skip passes over one value of any type.
func (r *reader) skip() error { return r.skipDepth(0) }

func (r *reader) skipDepth(depth int) error {
	if depth > maxSkipDepth {
		return r.fail("nested too deeply")
	}
	c, ok := r.peek()
	if !ok {
		return r.fail("value: end of input")
	}
	fixed := func(n int) error {
		r.off++
		if _, ok := r.next(n); !ok {
			return r.fail("value: end of input")
		}
		return nil
	}
	items := func(hdr, n int, pairs bool) error {
		r.off++
		var ok bool
		if hdr > 0 {
			n, ok = r.length(hdr)
			if !ok {
				return r.fail("container: bad length")
			}
		}
		if pairs {
			n *= 2
		}
		if n > len(r.b)-r.off {
			return r.fail("container: bad length")
		}
		for i := 0; i < n; i++ {
			if err := r.skipDepth(depth + 1); err != nil {
				return err
			}
		}
		return nil
	}
	ext := func(hdr int) error {
		r.off++
		n, ok := r.length(hdr)
		if !ok {
			return r.fail("ext: bad length")
		}
		if _, ok := r.next(n + 1); !ok {
			return r.fail("ext: end of input")
		}
		return nil
	}
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		r.off++
		return nil
	case c >= 0x80 && c <= 0x8f:
		return items(0, int(c&0x0f), true)
	case c >= 0x90 && c <= 0x9f:
		return items(0, int(c&0x0f), false)
	case (c >= 0xa0 && c <= 0xbf) || (c >= 0xc4 && c <= 0xc6) || (c >= 0xd9 && c <= 0xdb):
		_, err := r.bytes()
		return err
	}
	switch c {
	case 0xc7:
		return ext(1)
	case 0xc8:
		return ext(2)
	case 0xc9:
		return ext(4)
	case 0xca:
		return fixed(4)
	case 0xcb:
		return fixed(8)
	case 0xcc, 0xcd, 0xce, 0xcf:
		return fixed(1 << (c - 0xcc))
	case 0xd0, 0xd1, 0xd2, 0xd3:
		return fixed(1 << (c - 0xd0))
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		return fixed(1 + 1<<(c-0xd4))
	case 0xdc:
		return items(2, 0, false)
	case 0xdd:
		return items(4, 0, false)
	case 0xde:
		return items(2, 0, true)
	case 0xdf:
		return items(4, 0, true)
	}
	return r.fail("unknown type byte") // 0xc1, never used
}
