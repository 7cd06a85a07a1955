package kvevents

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/flashindexer/flashindexer/flash"
)

// Errors of the wire format. Each is counted in Stats under its reason.
var (
	// ErrMalformed: a payload or frame is not a batch of the format; the
	// whole batch is dropped. Errors wrapping it are *DecodeError.
	ErrMalformed = errors.New("kvevents: malformed batch")
	// ErrTokenCount: a BlockStored event's token_ids is not block_size
	// tokens per block hash; the event is dropped.
	ErrTokenCount = errors.New("kvevents: token count is not block_size per block")
	// ErrBlockSize: a BlockStored event's block_size is not the index's;
	// its local hashes could never match a query, so the event is dropped.
	ErrBlockSize = errors.New("kvevents: block size differs from the index's")
)

// DecodeError says where a payload stopped making sense.
type DecodeError struct {
	Offset int    // byte offset in the payload
	What   string // what was expected there
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("kvevents: malformed batch at byte %d: %s", e.Offset, e.What)
}

// Unwrap makes errors.Is(err, ErrMalformed) hold.
func (e *DecodeError) Unwrap() error { return ErrMalformed }

// Batch is one decoded payload: [timestamp, [events…], data_parallel_rank].
// Decode reuses its slices; the byte slices of its events alias the payload.
// What Decode allocates is bounded by the payload: at most MaxAllocFactor
// bytes per payload byte, whatever lengths the payload declares.
type Batch struct {
	TS     float64
	Events []RawEvent // the events of kinds this package knows, in order
	// Unknown counts the events skipped for a tag this package does not
	// know, so newer engines keep working.
	Unknown   int
	DPRank    uint32
	HasDPRank bool
}

// MaxAllocFactor bounds the bytes Decode allocates into a fresh Batch per
// byte of payload: an event of a known kind takes at least minEventBytes of
// payload and a RawEvent's 168 bytes, a block hash at least one byte and 8
// bytes, a token one byte and 4 bytes; a declared length may claim every
// byte left, once.
const MaxAllocFactor = 24

// minEventBytes: the shortest event of a known kind on the wire,
// ["BlockRemoved", []]: a fixarray, a fixstr of 12 bytes and an empty array.
const minEventBytes = 15

// Kept by Trim for the next payload: a batch and its events keep buffers up
// to these sizes, a burst of larger payloads leaves nothing larger behind.
const (
	keepEvents = 64
	keepHashes = 1024
	keepTokens = 16 * keepHashes
)

// Trim releases the buffers of b that are larger than an ordinary payload
// needs (more than 64 events, 1,024 hashes or 16,384 tokens in an event), so
// that a Batch reused for a stream keeps no outsized payload's memory.
func (b *Batch) Trim() {
	if cap(b.Events) > keepEvents {
		b.Events = nil
		return
	}
	evs := b.Events[:cap(b.Events)]
	for i := range evs {
		e := &evs[i]
		if cap(e.Hashes) > keepHashes {
			e.Hashes = nil
		}
		if cap(e.Tokens) > keepTokens {
			e.Tokens = nil
		}
		e.Tag, e.Medium, e.LoRAName = nil, nil, nil // they alias a payload
	}
}

// RawEvent is one event as the engine sent it.
type RawEvent struct {
	Kind      flash.EventKind
	Tag       []byte   // the event's tag, as sent
	Hashes    []uint64 // block_hashes (Stored, Removed)
	Parent    uint64   // parent_block_hash, when HasParent
	HasParent bool
	Tokens    []uint32 // token_ids (Stored)
	BlockSize int      // block_size (Stored)
	LoRAID    int64    // lora_id, when HasLoRAID
	HasLoRAID bool
	Medium    []byte // medium; nil when absent or nil
	LoRAName  []byte // lora_name; nil when absent or nil
}

// OnGPU reports whether the event concerns GPU memory: its medium is absent,
// nil or "GPU" (in any case).
func (e *RawEvent) OnGPU() bool { return e.Medium == nil || bytes.EqualFold(e.Medium, []byte("GPU")) }

var (
	tagStored  = []byte("BlockStored")
	tagRemoved = []byte("BlockRemoved")
	tagCleared = []byte("AllBlocksCleared")
)

// Decode parses a payload into b, reusing b's slices. Fields are read by
// position; trailing fields may be missing and unknown trailing fields are
// skipped. A payload that does not parse is a *DecodeError (ErrMalformed)
// and leaves b undefined.
func Decode(payload []byte, b *Batch) error {
	r := reader{b: payload}
	n, err := r.arrayLen()
	if err != nil {
		return err
	}
	if n < 2 {
		return r.fail("batch: fewer than 2 fields")
	}
	if b.TS, err = r.float(); err != nil {
		return err
	}
	ne := 0 // a nil list of events is read as an empty one
	if !r.nil() {
		if ne, err = r.arrayLen(); err != nil {
			return err
		}
	}
	// Room for as many known events as the bytes left can hold, not as
	// many as declared: an element may take one byte, a RawEvent 168.
	if want := min(ne, (len(payload)-r.off)/minEventBytes); cap(b.Events) < want {
		b.Events = append(b.Events[:cap(b.Events)], make([]RawEvent, want-cap(b.Events))...)
	}
	b.Events, b.Unknown = b.Events[:0], 0
	var spare RawEvent // decodes an event past the room: an unknown one
	for range ne {
		e := &spare
		if n := len(b.Events); n < cap(b.Events) {
			b.Events = b.Events[:n+1]
			e = &b.Events[n]
		}
		if err := decodeEvent(&r, e); err != nil {
			return err
		}
		switch {
		case e.Kind == 0:
			if e != &spare {
				b.Events = b.Events[:len(b.Events)-1]
			}
			b.Unknown++
		case e == &spare: // unreachable: known events fit the room
			b.Events = append(b.Events, spare)
		}
	}
	b.DPRank, b.HasDPRank = 0, false
	if n >= 3 {
		if !r.nil() {
			v, neg, err := r.integer()
			if err != nil {
				return err
			}
			if neg || v > math.MaxUint32 {
				return r.fail("data_parallel_rank out of range")
			}
			b.DPRank, b.HasDPRank = uint32(v), true
		}
		for i := 3; i < n; i++ {
			if err := r.skip(); err != nil {
				return err
			}
		}
	}
	if r.off != len(payload) {
		return r.fail("trailing bytes after the batch")
	}
	return nil
}

func decodeEvent(r *reader, e *RawEvent) error {
	n, err := r.arrayLen()
	if err != nil {
		return err
	}
	if n < 1 {
		return r.fail("event: no tag")
	}
	if e.Tag, err = r.bytes(); err != nil {
		return err
	}
	e.Hashes, e.Tokens = e.Hashes[:0], e.Tokens[:0]
	e.HasParent, e.Parent, e.BlockSize = false, 0, 0
	e.HasLoRAID, e.LoRAID, e.Medium, e.LoRAName = false, 0, nil, nil
	field := 1 // fields read so far, the tag included
	switch {
	case bytes.Equal(e.Tag, tagStored):
		e.Kind = flash.KindStored
		// block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium, lora_name
		if n < 5 {
			return r.fail("BlockStored: fewer than 4 fields")
		}
		if e.Hashes, err = hashes(r, e.Hashes); err != nil {
			return err
		}
		if !r.nil() {
			if e.Parent, err = r.hash(); err != nil {
				return err
			}
			e.HasParent = true
		}
		if e.Tokens, err = tokens(r, e.Tokens); err != nil {
			return err
		}
		v, neg, err := r.integer()
		if err != nil {
			return err
		}
		if neg || v > math.MaxInt32 {
			return r.fail("block_size out of range")
		}
		e.BlockSize = int(v)
		field = 5
		if more(&field, n) && !r.nil() {
			v, _, err := r.integer()
			if err != nil {
				return err
			}
			e.LoRAID, e.HasLoRAID = int64(v), true
		}
		if more(&field, n) {
			if e.Medium, err = optBytes(r); err != nil {
				return err
			}
		}
		if more(&field, n) {
			if e.LoRAName, err = optBytes(r); err != nil {
				return err
			}
		}
	case bytes.Equal(e.Tag, tagRemoved):
		e.Kind = flash.KindRemoved
		// block_hashes, medium
		if n < 2 {
			return r.fail("BlockRemoved: no block_hashes")
		}
		if e.Hashes, err = hashes(r, e.Hashes); err != nil {
			return err
		}
		field = 2
		if more(&field, n) {
			if e.Medium, err = optBytes(r); err != nil {
				return err
			}
		}
	case bytes.Equal(e.Tag, tagCleared):
		e.Kind = flash.KindCleared
	default:
		e.Kind = 0
	}
	for ; field < n; field++ {
		if err := r.skip(); err != nil {
			return err
		}
	}
	return nil
}

// more reports whether an event of n fields has one more (an optional
// trailing field), counting it as read.
func more(field *int, n int) bool {
	if *field < n {
		*field++
		return true
	}
	return false
}

// optBytes reads a string that may be nil (nil) or empty (empty, not nil).
func optBytes(r *reader) ([]byte, error) {
	if r.nil() {
		return nil, nil
	}
	return r.bytes()
}

func hashes(r *reader, dst []uint64) ([]uint64, error) {
	n, err := r.arrayLen()
	if err != nil {
		return dst, err
	}
	if cap(dst) < n { // n is at most the bytes left: one allocation, bounded
		dst = make([]uint64, 0, n)
	}
	for i := 0; i < n; i++ {
		h, err := r.hash()
		if err != nil {
			return dst, err
		}
		dst = append(dst, h)
	}
	return dst, nil
}

func tokens(r *reader, dst []uint32) ([]uint32, error) {
	n, err := r.arrayLen()
	if err != nil {
		return dst, err
	}
	if cap(dst) < n {
		dst = make([]uint32, 0, n)
	}
	for i := 0; i < n; i++ {
		v, neg, err := r.integer()
		if err != nil {
			return dst, err
		}
		if neg || v > math.MaxUint32 {
			return dst, r.fail("token id out of range")
		}
		dst = append(dst, uint32(v))
	}
	return dst, nil
}
