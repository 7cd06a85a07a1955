package ring

import (
	"context"
	"errors"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flashindexer/flashindexer/affinity"
)

var (
	// ErrClosed: the ring is stopped, or its owner's closed flag is set.
	ErrClosed = errors.New("ring: closed")
	// ErrFull: Reserve was asked not to wait and the ring is full.
	ErrFull = errors.New("ring: full")
)

// IdleSpin: a consumer that finds its ring empty watches it for this long
// before parking, so a steady stream of items does not pay a futex wake and
// an OS thread switch per item (a writer is locked to its thread, so
// yielding to the Go scheduler would switch threads too); an idle consumer
// then sleeps and uses no CPU. 20 µs is a few events' spacing at the event
// rates of a busy router, and a small fraction of a core when idle between
// bursts.
const IdleSpin = 20 * time.Microsecond

// Ring is a queue of items of type T with one consumer. Init it before use.
type Ring[T any] struct {
	mu         sync.Mutex
	items      []T
	closed     *atomic.Bool
	head, tail uint64
	queued     atomic.Uint64 // tail, for the idle consumer to watch without the lock
	parked     bool          // the consumer waits on notEmpty
	stopping   bool
	producers  int // goroutines waiting on notFull
	flushers   int // goroutines waiting on drained
	notEmpty   sync.Cond
	notFull    sync.Cond
	drained    sync.Cond
}

// Init makes a ring of n items; once *closed is set, Reserve refuses.
func (r *Ring[T]) Init(n int, closed *atomic.Bool) {
	r.items = make([]T, n)
	r.closed = closed
	r.notEmpty.L, r.notFull.L, r.drained.L = &r.mu, &r.mu, &r.mu
}

// Reserve returns the next free item with the ring locked, waiting for
// room unless try is set. The caller fills the item and calls Commit. On
// ErrClosed or ErrFull the ring is not locked.
func (r *Ring[T]) Reserve(try bool) (*T, error) {
	r.mu.Lock()
	for {
		if r.stopping || r.closed.Load() {
			r.mu.Unlock()
			return nil, ErrClosed
		}
		if r.tail-r.head < uint64(len(r.items)) {
			return &r.items[r.tail%uint64(len(r.items))], nil
		}
		if try {
			r.mu.Unlock()
			return nil, ErrFull
		}
		r.producers++
		r.notFull.Wait()
		r.producers--
	}
}

// Commit adds the item Reserve returned and unlocks the ring.
func (r *Ring[T]) Commit() {
	r.tail++
	r.queued.Store(r.tail)
	if r.parked {
		r.notEmpty.Signal()
	}
	r.mu.Unlock()
}

// Run is the consumer: it applies every item in order until Stop, then
// returns once the ring is drained.
func (r *Ring[T]) Run(apply func(*T)) {
	r.mu.Lock()
	for {
		if r.head == r.tail && !r.stopping {
			head := r.head
			r.mu.Unlock()
			for t0 := time.Now(); r.queued.Load() == head && time.Since(t0) < IdleSpin; {
				for i := 0; i < 64 && r.queued.Load() == head; i++ {
				}
			}
			r.mu.Lock()
		}
		for r.head == r.tail && !r.stopping {
			r.parked = true
			r.notEmpty.Wait()
			r.parked = false
		}
		if r.head == r.tail { // stopping, drained
			r.drained.Broadcast()
			r.notFull.Broadcast()
			r.mu.Unlock()
			return
		}
		end := r.tail
		r.mu.Unlock()
		for i := r.head; i < end; i++ {
			apply(&r.items[i%uint64(len(r.items))])
		}
		r.mu.Lock()
		r.head = end
		if r.flushers > 0 {
			r.drained.Broadcast()
		}
		if r.producers > 0 {
			r.notFull.Broadcast()
		}
	}
}

// Flush returns once every item committed before the call is applied.
func (r *Ring[T]) Flush() {
	r.mu.Lock()
	target := r.tail
	for r.head < target {
		r.flushers++
		r.drained.Wait()
		r.flushers--
	}
	r.mu.Unlock()
}

// Stop refuses new items and lets Run return once it applied the rest.
func (r *Ring[T]) Stop() {
	r.mu.Lock()
	r.stopping = true
	r.notEmpty.Signal()
	r.notFull.Broadcast()
	r.mu.Unlock()
}

// Len returns the number of items waiting or being applied.
func (r *Ring[T]) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int(r.tail - r.head)
}

// Serve runs Run as a writer thread: locked to its OS thread, pinned to cpu
// when cpu ≥ 0 (best effort: not permitted is fine), with the pprof labels
// flash=writer, lane=<lane>, so profiles tell the writers apart.
func (r *Ring[T]) Serve(cpu, lane int, apply func(*T)) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cpu >= 0 {
		_ = affinity.Pin(cpu)
	}
	labels := pprof.Labels("flash", "writer", "lane", strconv.Itoa(lane))
	pprof.Do(context.Background(), labels, func(context.Context) { r.Run(apply) })
}
