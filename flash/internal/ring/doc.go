// Package ring is a writer: its event queue, where producers copy items
// into a ring under a lock, and its thread (Serve), one consumer goroutine
// locked to an OS thread and pinned to a CPU that applies them in batches
// without the lock.
//
// The ring has counters head ≤ tail (never wrapped: an item's place is its
// counter modulo the ring's length). Its protocol:
//
//   - Producers (Reserve, Commit) MUST hold the lock to fill items[tail] and
//     advance tail; Reserve waits while tail-head is the ring's length (or,
//     asked not to wait, returns ErrFull). Once the ring is closed or
//     stopped, nothing is added (ErrClosed).
//   - The consumer (Run) alone reads items in [head, tail): it takes
//     end = tail under the lock, applies [head, end) without it, then
//     advances head to end under the lock. Items in [head, end) MUST NOT be
//     written by anyone else meanwhile, which holds because producers write
//     only at tail and tail-head never passes the ring's length.
//   - The consumer owns an item from the moment it reads it until it
//     advances head; apply MUST leave the item holding no reference the
//     producer's caller still owns.
//   - Flush returns once head reaches the tail it saw: every item committed
//     before the call has been applied. The consumer parks only with the
//     lock held and head == tail, after IdleSpin of watching tail without
//     the lock.
//   - Stop lets the consumer drain what was committed and return.
package ring
