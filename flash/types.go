package flash

// LocalHash is the hash of one block's tokens only (a chunk hash). It does not
// depend on the block's position, so a router hashes a prompt's blocks
// independently.
type LocalHash uint64

// ExternalHash is an engine's own opaque id for a cached block. The index never
// recomputes it; it only uses it to find a block again (as a parent, or to remove it).
type ExternalHash uint64

// SeqHash is the rolling hash of a whole prefix through a block:
// seq[0] = local[0], seq[i] = Chain(seq[i-1], local[i]).
type SeqHash uint64

// Worker identifies one cache owner. Each data-parallel rank of an engine is a
// worker of its own; RemoveWorker drops every rank of an ID.
type Worker struct {
	ID     uint64
	DPRank uint32
}

// Tier is one tier of KV-cache storage, an index into Config.Tiers: 0 is
// the fastest (the GPU's memory), each next one slower (CPU memory, disk).
// A worker holds each of its blocks in a set of tiers.
type Tier uint8

// MaxTiers bounds the tiers of an index: GPU, CPU memory, local disk and
// a remote store are the most any engine keeps (LMCache's backends,
// Dynamo's KV block manager), and each tier's depth is in every Match.
const MaxTiers = 4

// Block is one block of a Stored event: the engine's id for it and the hash of
// its tokens.
type Block struct {
	Hash  ExternalHash
	Local LocalHash
}

// EventKind says what an Event does.
type EventKind uint8

const (
	// KindStored adds a batch of blocks under an optional parent.
	KindStored EventKind = iota + 1
	// KindRemoved removes the listed blocks.
	KindRemoved
	// KindCleared removes every block of one worker (one DP rank).
	KindCleared
)

func (k EventKind) String() string {
	if k < KindStored || k > KindCleared {
		return "unknown"
	}
	return [...]string{"stored", "removed", "cleared"}[k-KindStored]
}

// Event is one cache event of one worker. Build it with StoredEvent,
// RemovedEvent or ClearedEvent. Events of one worker must be applied in the
// order the worker emitted them.
//
// An index copies what it needs from an Event before Apply returns, so the
// caller may reuse Blocks and Hashes at once.
type Event struct {
	Kind   EventKind
	Worker Worker
	// ID is the worker's event sequence number, as the engine numbers its
	// events. It is carried for gap detection and diagnostics.
	ID uint64
	// Parent is the external hash of the block that Blocks[0] extends; it is
	// meaningful only when HasParent is set. Without a parent, Blocks[0] is at
	// position 0.
	Parent    ExternalHash
	HasParent bool
	// Tier is the tier a Stored event adds its blocks to, or a Removed
	// event takes them from (the zero value: the fastest). A Cleared event
	// empties every tier, or only Tier when TierOnly is set.
	Tier     Tier
	TierOnly bool
	// Blocks are the stored blocks, each the child of the one before (Stored).
	Blocks []Block
	// Hashes are the removed blocks (Removed).
	Hashes []ExternalHash
}

// StoredEvent returns a Stored event with no parent: blocks[0] is at position 0.
func StoredEvent(w Worker, blocks ...Block) Event {
	return Event{Kind: KindStored, Worker: w, Blocks: blocks}
}

// RemovedEvent returns a Removed event for the listed blocks.
func RemovedEvent(w Worker, hashes ...ExternalHash) Event {
	return Event{Kind: KindRemoved, Worker: w, Hashes: hashes}
}

// ClearedEvent returns a Cleared event: the worker (that DP rank) holds nothing.
func ClearedEvent(w Worker) Event {
	return Event{Kind: KindCleared, Worker: w}
}

// WithParent returns e with its first block attached under parent.
func (e Event) WithParent(parent ExternalHash) Event {
	e.Parent, e.HasParent = parent, true
	return e
}

// InTier returns e in tier t: a Stored event adds its blocks to t, a
// Removed event takes them from t, a Cleared event empties t only.
func (e Event) InTier(t Tier) Event {
	e.Tier, e.TierOnly = t, true
	return e
}

// WithID returns e carrying the event id.
func (e Event) WithID(id uint64) Event {
	e.ID = id
	return e
}
