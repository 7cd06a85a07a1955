package kvevents

import (
	"errors"
	"strconv"
	"strings"

	"github.com/flashindexer/flashindexer/flash"
)

// ErrUnknownMedium: a Stored or Removed event names a medium that the tier
// map (WithMedia, Translator.SetMedia) does not name. The event is
// dropped and counted (Stats.UnknownMedium), never applied to another
// tier.
var ErrUnknownMedium = errors.New("kvevents: event names a medium with no tier")

// MediaFor returns the tier map of an index of these tiers: each tier's
// name (Config.Tiers) names it. vLLM (its offloading connector), LMCache
// through vLLM, and SGLang's hierarchical cache publish "GPU" and "CPU"
// (some connectors in lower case: names match without regard to case), so
// an index configured with tiers named GPU and CPU reads them all.
func MediaFor(tiers []flash.TierSpec) map[string]flash.Tier {
	if len(tiers) == 0 {
		tiers = flash.DefaultTiers
	}
	m := make(map[string]flash.Tier, len(tiers))
	for t, ts := range tiers {
		m[ts.Name] = flash.Tier(t)
	}
	return m
}

// Translator turns decoded engine events into flash events: engine block
// hashes become external hashes, token_ids become local hashes (XXH3 with the
// LoRA adapter's seed, as flash.TokenHasher computes them for queries).
// It reuses its buffers: an Event it returns is valid until the next call.
// Not safe for concurrent use.
type Translator struct {
	blockSize int
	media     map[string]flash.Tier // upper-case names
	upper     []byte                // a medium's name, upper-cased
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

// NewTranslator returns a Translator for an index of blockSize tokens per
// block and the default tier, "GPU", alone (SetMedia).
func NewTranslator(blockSize int) *Translator {
	t := &Translator{blockSize: blockSize, seeds: map[string]uint64{"": flash.Seed}}
	t.SetMedia(MediaFor(nil))
	return t
}

// SetMedia sets the tier map: the medium names an event may carry (matched
// without regard to case) and the tier of each. An event with no medium is
// in the fastest tier; one whose medium the map does not name is refused
// (ErrUnknownMedium).
func (t *Translator) SetMedia(media map[string]flash.Tier) {
	t.media = make(map[string]flash.Tier, len(media))
	for name, tier := range media {
		t.media[strings.ToUpper(name)] = tier
	}
}

// tier returns the tier of e's medium.
func (t *Translator) tier(e *RawEvent) (flash.Tier, error) {
	if e.Medium == nil {
		return 0, nil
	}
	t.upper = t.upper[:0]
	for _, c := range e.Medium {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		t.upper = append(t.upper, c)
	}
	if tier, ok := t.media[string(t.upper)]; ok { // no allocation for the lookup
		return tier, nil
	}
	return 0, ErrUnknownMedium
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

// Event returns the flash event of e for worker w, in the tier of its
// medium. ok is false for an event that carries nothing for the index (an
// unknown tag). A Stored event whose token_ids do not fit its blocks
// returns ErrTokenCount or ErrBlockSize; a Stored or Removed event of a
// medium the tier map does not name, ErrUnknownMedium.
func (t *Translator) Event(w flash.Worker, e *RawEvent) (ev flash.Event, ok bool, err error) {
	switch e.Kind {
	case flash.KindStored:
		tier, err := t.tier(e)
		if err != nil {
			return ev, false, err
		}
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
		ev.Tier = tier
		return ev, true, nil
	case flash.KindRemoved:
		tier, err := t.tier(e)
		if err != nil {
			return ev, false, err
		}
		t.hashes = t.hashes[:0]
		for _, h := range e.Hashes {
			t.hashes = append(t.hashes, flash.ExternalHash(h))
		}
		ev = flash.RemovedEvent(w, t.hashes...)
		ev.Tier = tier
		return ev, true, nil
	case flash.KindCleared:
		return flash.ClearedEvent(w), true, nil
	}
	return ev, false, nil
}
