package flash

import (
	"slices"
	"time"

	"github.com/flashindexer/flashindexer/flash/internal/entry"
	"github.com/flashindexer/flashindexer/flash/internal/lane"
)

// Index is what every backend implements: the Flash indexer, the reference
// model and the baselines. The conformance suite in flash/flashtest tests any
// Index against the semantics in the package documentation.
type Index interface {
	// Apply hands one event to the index. The index copies what it needs
	// before returning. An index that applies events on writer goroutines
	// returns only admission errors (ErrClosed, malformed events it can see
	// without state); rejections found later are counted in Stats. A
	// synchronous index returns every rejection.
	Apply(ev Event) error
	// FindMatches writes into dst (after resetting it) the depth of every
	// worker that holds a prefix of q.
	FindMatches(q Query, dst *Scores)
	// RemoveWorker drops every DP rank of worker id.
	RemoveWorker(id uint64) error
	// BlockCount returns the number of blocks w holds.
	BlockCount(w Worker) int
	// Flush returns once every event accepted before the call is applied.
	Flush()
	// Stats returns a snapshot of the index's counters.
	Stats() Stats
	// Close drains and stops the index; later calls return ErrClosed.
	Close() error
}

// Predictor is an Index that can also record a router's decisions: blocks
// a worker will hold soon, for a while (package documentation, section
// Predictions). The Flash indexer and the reference model are Predictors.
type Predictor interface {
	Index
	// Predict records that w will hold the blocks of q (positions 0 to
	// len(q.Locals)−1) until ttl from now, on the index's clock
	// (Config.Clock). Like Apply, it is ordered with w's events and returns
	// only admission errors when the index has writers: ErrClosed,
	// ErrEmptyEvent, ErrBatchTooLarge, ErrTooDeep, ErrBadTTL (and
	// ErrTooManyWorkers from a synchronous index).
	Predict(w Worker, q Query, ttl time.Duration) error
}

// WorkerAdder is an Index that can give a worker its slot before the
// worker's first event: a router that learns of an engine when it registers
// (and of its capacity, WithWorkerCapacity) declares it then, so that the
// engine's first event finds its state made. The Flash indexer and the
// reference model are WorkerAdders.
type WorkerAdder interface {
	Index
	// AddWorker gives w (that ID and DP rank) a slot, holding no blocks;
	// nothing changes if w has one. It returns ErrTooManyWorkers when
	// every slot is taken and ErrClosed after Close, each counted in
	// Stats as a rejection. With writers it is ordered with w's events
	// and returns once w's writer has applied it.
	AddWorker(w Worker) error
}

// Config holds the settings shared by every backend. Backends ignore the
// fields that do not apply to them.
type Config struct {
	// BlockSize is the engine's tokens per block: Match.Tokens = Depth × BlockSize.
	BlockSize int
	// MaxWorkers bounds the workers (DP ranks) known at once, up to MaxWorkersLimit.
	MaxWorkers int
	// MaxDepth bounds block positions: a block at position >= MaxDepth is
	// rejected. At most MaxDepthLimit.
	MaxDepth int
	// MaxBatch bounds the blocks (or hashes) of one event.
	MaxBatch int
	// MaxPredicted bounds each worker's predicted blocks (Predictor): past
	// it, the blocks that expire first leave first.
	MaxPredicted int
	// Clock is the time of predictions, monotonic and safe for concurrent
	// use (nil: the process's monotonic clock).
	Clock func() time.Duration
	// Tiers are the KV-cache tiers, fastest first, at most MaxTiers (nil:
	// DefaultTiers, the GPU alone). Events name a tier by its index here
	// (Event.Tier); queries answer a depth per tier (Match.TierDepth). The
	// Flash indexer keeps MaxWorkers × tiers within MaxWorkersLimit,
	// lowering MaxWorkers.
	Tiers []TierSpec
}

// TierSpec is one tier of an index: its name (as kvevents matches an
// engine's medium to it, and metrics label it) and its weight in
// Scores.Best, the worth of a block found there against one found in the
// fastest tier (0: DefaultTierWeight).
type TierSpec struct {
	Name   string
	Weight float64
}

// DefaultTiers is the tiers of an index that names none: the GPU alone.
var DefaultTiers = []TierSpec{{Name: "GPU", Weight: 1}}

// DefaultTierWeight returns the weight of tier t when its TierSpec gives
// none: 1 for the fastest, then 3/4, 1/2, 1/4. A block on the GPU is
// reused as it is; one in CPU memory saves its prefill but is copied over
// PCIe first (several times faster than recomputing it: 3/4); one on disk
// is read and copied (1/2); from a remote store, fetched too (1/4).
// So Best prefers 4 blocks on a worker's GPU to 5 in another's CPU memory
// (3.75), and 6 there (4.5) to them.
func DefaultTierWeight(t Tier) float64 {
	switch t {
	case 0:
		return 1
	case 1:
		return 0.75
	}
	return 1 / float64(uint64(1)<<(t-1))
}

// Default settings.
const (
	// DefaultBlockSize is vLLM's default block size.
	DefaultBlockSize = 16
	// DefaultMaxWorkers: 16 words of worker bitset per slot; published
	// deployments route across tens to hundreds of ranks.
	DefaultMaxWorkers = 1024
	// DefaultMaxDepth: 262,144 blocks, 4M tokens at block size 16, four
	// times the 1M-token windows served widely today.
	DefaultMaxDepth = 1 << 18
	// MaxWorkersLimit bounds MaxWorkers (a small worker set names slots in 20
	// bits); Normalize lowers a larger MaxWorkers to it.
	MaxWorkersLimit = entry.MaxSlots
	// MaxDepthLimit bounds MaxDepth: block positions are 32-bit in Flash's
	// nodes. Normalize lowers a larger MaxDepth to it.
	MaxDepthLimit = 1<<31 - 1
	// DefaultMaxBatch: one event never carries more blocks than one sequence
	// can hold.
	DefaultMaxBatch = DefaultMaxDepth
	// DefaultMaxPredicted: as many blocks as a mock engine caches in the
	// bench's simulator (16,384).
	DefaultMaxPredicted = 1 << 14
	// DefaultPredictionTTL: conversations come back minutes apart
	// (docs/BENCHMARKS.md measures the TTL's effect).
	DefaultPredictionTTL = 10 * time.Minute
)

// DefaultConfig returns the default Config.
func DefaultConfig() Config {
	return Config{
		BlockSize:    DefaultBlockSize,
		MaxWorkers:   DefaultMaxWorkers,
		MaxDepth:     DefaultMaxDepth,
		MaxBatch:     DefaultMaxBatch,
		MaxPredicted: DefaultMaxPredicted,
		Clock:        lane.Monotonic,
	}
}

// Normalize replaces zero or negative fields with their defaults, and a
// MaxWorkers or MaxDepth past its limit with the limit.
func (c Config) Normalize() Config {
	d := DefaultConfig()
	if c.BlockSize <= 0 {
		c.BlockSize = d.BlockSize
	}
	if c.MaxWorkers <= 0 {
		c.MaxWorkers = d.MaxWorkers
	}
	c.MaxWorkers = min(c.MaxWorkers, MaxWorkersLimit)
	if c.MaxDepth <= 0 {
		c.MaxDepth = d.MaxDepth
	}
	c.MaxDepth = min(c.MaxDepth, MaxDepthLimit)
	if c.MaxBatch <= 0 {
		c.MaxBatch = d.MaxBatch
	}
	if c.MaxPredicted <= 0 {
		c.MaxPredicted = d.MaxPredicted
	}
	if c.Clock == nil {
		c.Clock = d.Clock
	}
	c.Tiers = normalTiers(c.Tiers)
	return c
}

// normalTiers returns a copy of tiers, at most MaxTiers, every weight set
// (DefaultTierWeight); DefaultTiers when there are none.
func normalTiers(tiers []TierSpec) []TierSpec {
	if len(tiers) == 0 {
		return DefaultTiers
	}
	tiers = slices.Clone(tiers[:min(len(tiers), MaxTiers)])
	for t := range tiers {
		if !(tiers[t].Weight > 0) { // NaN too
			tiers[t].Weight = DefaultTierWeight(Tier(t))
		}
	}
	return tiers
}

// NumTiers returns the number of tiers of the (normalized) config: at
// least 1.
func (c *Config) NumTiers() int { return max(len(c.Tiers), 1) }
