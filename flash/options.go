package flash

import "runtime"

// Option configures New.
type Option func(*settings)

type settings struct {
	cfg        Config
	writers    int
	syncLanes  int
	jump       int
	queue      int
	pin        bool
	laneTables bool
	onReject   func(ev *Event, err error)
	onGap      func(w Worker, expected, got uint64)
	capacity   func(w Worker) int
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
// Apply holds its worker's lane while it applies the event on the caller's
// goroutine, so callers whose workers are in different lanes apply their
// events in parallel, with no goroutine hand-over: a router with one event
// goroutine per engine endpoint uses its own goroutines as the writers.
// With more than one lane, writers lock the shard of each shared entry they
// change, unless each lane has a table of its own (WithLaneTables).
func WithSyncLanes(n int) Option {
	return func(s *settings) { s.syncLanes = min(max(1, n), MaxSyncLanes) }
}

// WithLaneTables gives every lane (writer goroutine, or synchronous lane) a
// shared table of its own, holding the entries of its own workers only:
// writers in different lanes then share no part of a table (no shard locks,
// no table lines moving between their cores), and a query searches each
// lane's table in turn and joins the answers, which stay exact since each
// worker is in one lane. Stores scale with the lanes; a query costs about
// one search per lane, and a content held in several lanes has an entry in
// each; each table also has its own inline slots for the first positions
// (64 KiB). Without it (the default) the lanes share one table and lock its
// shards.
func WithLaneTables(on bool) Option { return func(s *settings) { s.laneTables = on } }

// MaxSyncLanes bounds WithSyncLanes.
const MaxSyncLanes = 64

// WithJumpSize sets the distance between jump-search checkpoints.
func WithJumpSize(j int) Option { return func(s *settings) { s.jump = max(1, j) } }

// WithQueueSize sets each writer's queue length in events.
func WithQueueSize(n int) Option { return func(s *settings) { s.queue = max(1, n) } }

// WithPinning sets whether writer threads are pinned to CPUs (default on;
// where pinning is not possible it is skipped).
func WithPinning(on bool) Option { return func(s *settings) { s.pin = on } }

// WithEventIDs turns on tracking of every worker's event ids (Event.ID, the
// engine's sequence number): each worker's first event sets its sequence;
// afterwards an id above the next expected one is a gap (events were lost
// upstream), an id at or below the last one a restart (the engine started
// again). Both are counted (Stats.EventGaps, Stats.EventRestarts) and, when
// onGap is not nil, reported with the expected and the received id, so a
// router can resync that worker (for example: Cleared, then replay). The
// event itself is applied as usual. onGap runs on the goroutine that applies
// the event and must not block or call back into the index.
func WithEventIDs(onGap func(w Worker, expected, got uint64)) Option {
	return func(s *settings) {
		s.onGap = onGap
		if onGap == nil {
			s.onGap = func(Worker, uint64, uint64) {}
		}
	}
}

// WithRejectHandler sets a function called with every rejected event and its
// error, on the goroutine that applied it (a writer, or Apply's caller). The
// event is valid only during the call; the function must not block or call
// back into the index.
func WithRejectHandler(f func(ev *Event, err error)) Option {
	return func(s *settings) { s.onReject = f }
}

// WithWorkerCapacity tells the index how many blocks each worker's cache
// holds (vLLM's num_gpu_blocks): a worker's private state (its engine-id
// map and its nodes, up to 2^20 blocks) is made for that many blocks when
// the worker is first seen (its first event, or Indexer.AddWorker ahead of
// it) and kept through Cleared events, so filling its cache allocates
// nothing more for it (their pages are mapped then, not by the first
// events that write them). When it takes its slot, room is set aside for its
// blocks in the shared tables it writes (48 bytes a block, kept by the
// tables; given back for later workers when it is removed), with the
// levels of the first 1,024 positions and a batch scratch for its events:
// a fleet declared ahead fills from empty without allocating while its
// tables fit that room, as a prompt's positions do (most blocks early; on
// the Mooncake trace at 16, 96 and 256 workers they do). Past 128 workers,
// a worker at slot 63 or past it moves each set it joins first into an
// arena slot (16 + MaxWorkers/8 bytes), so it also sets aside one slot a
// block, its pages mapped, for the sets it may move. Without a hint
// a worker's state grows as blocks arrive (amortised) and a Cleared worker
// keeps only a small part of it.
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
