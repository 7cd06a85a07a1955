package kvevents

import (
	"strconv"

	"github.com/flashindexer/flashindexer/flash"
)

// Translator turns decoded engine events into flash events: engine block
// hashes become external hashes, token_ids become local hashes (XXH3 with the
// LoRA adapter's seed, as flash.TokenHasher computes them for queries).
// It reuses its buffers: an Event it returns is valid until the next call.
// Not safe for concurrent use.
type Translator struct {
	blockSize int
	seeds     map[string]uint64
	blocks    []flash.Block
	hashes    []flash.ExternalHash
	idName    []byte
}

// Trim releases the Translator's buffers when they are larger than an
// ordinary event needs (1,024 blocks), so that one outsized event leaves
// nothing behind.
func (t *Translator) Trim() {
	if cap(t.blocks) > keepHashes {
		t.blocks = nil
	}
	if cap(t.hashes) > keepHashes {
		t.hashes = nil
	}
}

// NewTranslator returns a Translator for an index of blockSize tokens per block.
func NewTranslator(blockSize int) *Translator {
	return &Translator{blockSize: blockSize, seeds: map[string]uint64{"": flash.Seed}}
}

// seed returns the local-hash seed of an event: the LoRA adapter's name
// when the event names it, else the decimal lora_id when it has one, else
// the base model's.
func (t *Translator) seed(e *RawEvent) uint64 {
	name := e.LoRAName
	if len(name) == 0 && e.HasLoRAID {
		t.idName = strconv.AppendInt(t.idName[:0], e.LoRAID, 10)
		name = t.idName
	}
	if s, ok := t.seeds[string(name)]; ok { // no allocation for the lookup
		return s
	}
	s := flash.LoRASeed(string(name))
	if len(t.seeds) < 1<<12 {
		t.seeds[string(name)] = s
	}
	return s
}

// Event returns the flash event of e for worker w. ok is false for an event
// that carries nothing for the index (an unknown tag). A Stored event whose
// token_ids do not fit its blocks returns ErrTokenCount or ErrBlockSize.
func (t *Translator) Event(w flash.Worker, e *RawEvent) (ev flash.Event, ok bool, err error) {
	switch e.Kind {
	case flash.KindStored:
		if e.BlockSize != t.blockSize {
			return ev, false, ErrBlockSize
		}
		if len(e.Tokens) != len(e.Hashes)*t.blockSize {
			return ev, false, ErrTokenCount
		}
		seed := t.seed(e)
		t.blocks = t.blocks[:0]
		for i, h := range e.Hashes {
			toks := e.Tokens[i*t.blockSize : (i+1)*t.blockSize]
			t.blocks = append(t.blocks, flash.Block{Hash: flash.ExternalHash(h), Local: flash.HashTokens(toks, seed)})
		}
		ev = flash.StoredEvent(w, t.blocks...)
		if e.HasParent {
			ev = ev.WithParent(flash.ExternalHash(e.Parent))
		}
		return ev, true, nil
	case flash.KindRemoved:
		t.hashes = t.hashes[:0]
		for _, h := range e.Hashes {
			t.hashes = append(t.hashes, flash.ExternalHash(h))
		}
		return flash.RemovedEvent(w, t.hashes...), true, nil
	case flash.KindCleared:
		return flash.ClearedEvent(w), true, nil
	}
	return ev, false, nil
}
