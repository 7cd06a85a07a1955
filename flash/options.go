package flash

import "runtime"

// Option configures New.
type Option func(*settings)

type settings struct {
	cfg                             Config
	writers, syncLanes, jump, queue int
	pin, laneTables, reserve        bool
	onReject                        func(ev *Event, err error)
	onGap                           func(w Worker, expected, got uint64)
	capacity                        func(w Worker) int
}

const (
	// DefaultJumpSize is the distance between checkpoints of the jump search:
	// on full matches 64 needs half the probes of 32, on the Mooncake trace
	// 16, 32 and 64 are level (BenchmarkJumpSize, docs/BENCHMARKS.md).
	DefaultJumpSize = 64
	// DefaultQueueSize is each writer's queue, in events: enough to absorb a
	// burst of prefill events from many workers while the writer catches up,
	// small enough that the copies stay in cache.
	DefaultQueueSize = 1024
)

// DefaultWriters returns the default number of writer goroutines: a quarter
// of the CPUs (events are a fraction of the work; queries run on callers'
// goroutines), at least 1, at most 8.
func DefaultWriters() int { return min(8, max(1, runtime.GOMAXPROCS(0)/4)) }

func defaults() settings {
	return settings{cfg: DefaultConfig(), writers: DefaultWriters(), syncLanes: 1, jump: DefaultJumpSize, queue: DefaultQueueSize, pin: true}
}

// WithConfig sets the shared settings (block size, bounds) at once.
func WithConfig(c Config) Option { return func(s *settings) { s.cfg = c.Normalize() } }

// WithBlockSize sets the engine's tokens per block (Match.Tokens = Depth × n).
func WithBlockSize(n int) Option { return func(s *settings) { s.cfg.BlockSize = n } }

// WithTiers sets the KV-cache tiers, fastest first (Config.Tiers).
func WithTiers(tiers ...TierSpec) Option { return func(s *settings) { s.cfg.Tiers = tiers } }

// WithMaxWorkers sets how many workers (DP ranks) may be known at once; it
// fixes the width of every worker set (rounded up to 64).
func WithMaxWorkers(n int) Option { return func(s *settings) { s.cfg.MaxWorkers = n } }

// WithMaxDepth bounds block positions.
func WithMaxDepth(n int) Option { return func(s *settings) { s.cfg.MaxDepth = n } }

// WithMaxBatch bounds the blocks of one event.
func WithMaxBatch(n int) Option { return func(s *settings) { s.cfg.MaxBatch = n } }

// WithWriters sets the number of writer goroutines. 0 makes the index
// synchronous: Apply applies the event on the caller's goroutine and returns
// every rejection.
func WithWriters(n int) Option { return func(s *settings) { s.writers = max(0, n) } }

// WithSyncLanes sets the lanes of a synchronous index (WithWriters(0)):
// 1 to MaxSyncLanes, default 1. Each worker belongs to one lane (LaneOf);
// Apply holds its worker's lane while it applies the event, so callers
// whose workers are in different lanes (a router's goroutine per engine
// endpoint) apply in parallel. Ignored with writers (WithWriters above 0):
// each writer goroutine is a lane.
func WithSyncLanes(n int) Option {
	return func(s *settings) { s.syncLanes = min(max(1, n), MaxSyncLanes) }
}

// WithLaneTables gives every lane (writer goroutine, or synchronous lane) a
// shared table of its own, holding its own workers' entries: lanes then
// share no part of a table and take no shard locks, and a query searches
// each lane's table and joins the answers (about one search per lane).
// Without it (the default) the lanes share one table and lock its shards.
// Ignored with one lane: that lane's table is the index's.
func WithLaneTables(on bool) Option { return func(s *settings) { s.laneTables = on } }

// MaxSyncLanes bounds WithSyncLanes.
const MaxSyncLanes = 64

// WithJumpSize sets the distance between jump-search checkpoints.
func WithJumpSize(j int) Option { return func(s *settings) { s.jump = max(1, j) } }

// WithQueueSize sets each writer's queue length in events. Ignored by a
// synchronous index (WithWriters(0)), which has no queue.
func WithQueueSize(n int) Option { return func(s *settings) { s.queue = max(1, n) } }

// WithPinning sets whether writer threads are pinned to CPUs (default on;
// where pinning is not possible it is skipped). Ignored by a synchronous
// index (WithWriters(0)): its writers are the callers' goroutines.
func WithPinning(on bool) Option { return func(s *settings) { s.pin = on } }

// WithEventIDs turns on tracking of every worker's event ids (Event.ID, the
// engine's sequence number): each worker's first event sets its sequence;
// afterwards an id above the next expected one is a gap (events were lost
// upstream), an id at or below the last one a restart (the engine started
// again). Both are counted (Stats.EventGaps, Stats.EventRestarts) and
// reported to onGap with the expected and the received id, so a router can
// resync that worker; the event itself applies as usual. onGap runs on the
// goroutine that applies the event and must not block or call back into
// the index. WithEventIDs(nil) is the default: no tracking.
func WithEventIDs(onGap func(w Worker, expected, got uint64)) Option {
	return func(s *settings) { s.onGap = onGap }
}

// WithRejectHandler sets a function called with every rejected event and its
// error, on the goroutine that applied it (a writer, or Apply's caller). The
// event is valid only during the call; the function must not block or call
// back into the index.
func WithRejectHandler(f func(ev *Event, err error)) Option {
	return func(s *settings) { s.onReject = f }
}

// WithWorkerCapacity tells the index how many blocks each worker's cache
// holds (vLLM's num_gpu_blocks): a worker's id map grows toward it in 4×
// steps and keeps it through Cleared events, its memory following what it
// holds. WithReservedCapacity makes that state ahead.
func WithWorkerCapacity(blocks int) Option {
	return WithWorkerCapacityOf(func(Worker) int { return blocks })
}

// WithWorkerCapacityOf is WithWorkerCapacity for fleets of unequal workers:
// f is called when a worker is first seen (again if that first event is
// rejected), on the goroutine that applies the event, and returns its
// capacity in blocks (0: unknown). f must not block or call back into the
// index.
func WithWorkerCapacityOf(f func(w Worker) int) Option {
	return func(s *settings) { s.capacity = f }
}

// WithReservedCapacity makes a hinted worker's state for its capacity when
// it is first seen (first event, or Indexer.AddWorker): private maps (up to
// 2^20 blocks, pages mapped, kept through Cleared) and room in the shared
// tables, 48 bytes a block, given back when it leaves. A fleet declared
// ahead then fills from empty without allocating while its blocks fit (but
// for the arena slots of wide sets past 128 workers); its memory is its
// declared capacity's from the start.
func WithReservedCapacity() Option { return func(s *settings) { s.reserve = true } }
