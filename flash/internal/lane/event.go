package lane

import (
	"errors"
	"math/bits"
	"time"
	"unsafe"

	"github.com/flashindexer/flashindexer/flash/internal/worker"
	"github.com/flashindexer/flashindexer/internal/order"
)

// Worker is flash.Worker.
type Worker struct {
	ID     uint64
	DPRank uint32
}

// Kind is flash.EventKind.
type Kind uint8

// The event kinds, as flash numbers them.
const (
	Stored Kind = iota + 1
	Removed
	Cleared
)

// Event is flash.Event's layout (flash passes its events in place:
// TestLayout there checks every field).
type Event struct {
	Kind      Kind
	Worker    Worker
	ID        uint64
	Parent    uint64
	HasParent bool
	Tier      uint8
	TierOnly  bool
	Blocks    []worker.Block
	Hashes    []uint64
}

// The errors of events rejected before they reach a worker's state (flash
// documents them; worker's are the others).
var (
	ErrEmptyEvent     = errors.New("flash: event carries no blocks")
	ErrBatchTooLarge  = errors.New("flash: event carries more blocks than allowed")
	ErrTooManyWorkers = errors.New("flash: too many workers")
	ErrBadKind        = errors.New("flash: unknown event kind")
	ErrClosed         = errors.New("flash: index closed")
	ErrQueueFull      = errors.New("flash: writer queue full")
	ErrBadTTL         = errors.New("flash: prediction ttl must be positive")
	ErrBadTier        = errors.New("flash: event names a tier the index does not have")
)

// Check returns the error of an event that is malformed on its own,
// whatever the index holds: an unknown kind, a tier past the index's
// tiers, an empty batch or one of more than maxBatch blocks (or hashes).
func Check(ev *Event, maxBatch, tiers int) error {
	n := len(ev.Hashes)
	switch ev.Kind {
	case Stored:
		n = len(ev.Blocks)
	case Removed:
	case Cleared:
		if ev.TierOnly && int(ev.Tier) >= tiers {
			return ErrBadTier
		}
		return nil
	default:
		return ErrBadKind
	}
	if int(ev.Tier) >= tiers {
		return ErrBadTier
	}
	if n == 0 {
		return ErrEmptyEvent
	}
	if n > maxBatch {
		return ErrBatchTooLarge
	}
	return nil
}

// CheckPrediction returns the error of a prediction of n blocks that is
// malformed on its own: none, more than maxBatch or maxDepth, a ttl ≤ 0.
func CheckPrediction(n int, ttl time.Duration, maxBatch, maxDepth int) error {
	switch {
	case n == 0:
		return ErrEmptyEvent
	case n > maxBatch:
		return ErrBatchTooLarge
	case n > maxDepth:
		return worker.ErrTooDeep
	case ttl <= 0:
		return ErrBadTTL
	}
	return nil
}

// processStart is the origin of Monotonic.
var processStart = time.Now()

// Monotonic is the default clock of predictions: the time since the
// process started, read from the monotonic clock.
func Monotonic() time.Duration { return time.Since(processStart) }

// For returns the lane, in [0, lanes), of worker ID id (flash.LaneFor).
func For(id uint64, lanes int) int {
	l, _ := bits.Mul64(id*0x9E3779B97F4A7C15, uint64(max(lanes, 1)))
	return int(l)
}

// prefetchEvent asks for the first lines of ev's blocks (or hashes), which
// the writer reads first once it has found the worker and taken the lane:
// an event decoded a while ago, or one of many held in a batch, is out of
// cache by then, and its first block's miss would stall the work that
// depends on it.
func prefetchEvent(ev *Event) { order.PrefetchLines(eventLines(ev)) }

// eventLines returns where prefetchEvent asks for and how many bytes: the
// first prefetchEventBytes of a Stored event's blocks, or of any other's
// hashes.
func eventLines(ev *Event) (addr, n uintptr) {
	if ev.Kind == Stored {
		return uintptr(unsafe.Pointer(unsafe.SliceData(ev.Blocks))), min(uintptr(len(ev.Blocks))*unsafe.Sizeof(worker.Block{}), prefetchEventBytes)
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(ev.Hashes))), min(uintptr(len(ev.Hashes))*8, prefetchEventBytes)
}

// prefetchEventBytes: prefetchEvent asks for up to this many bytes of an
// event, sixteen lines, 64 blocks (nine of the trace's requests in ten
// are shorter); the hardware's prefetcher follows a longer one's stream.
// Building the trace's index at 16 workers, by turns with the map (27
// rounds): 5.4% faster with hints and 4.6% from empty than without the
// prefetches, and about 2.5% more than with four lines.
const prefetchEventBytes = 1024
