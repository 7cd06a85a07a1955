// Package lane applies events: a Set of lanes, each the one owner of its
// workers' private state (package worker), with the worker directory and
// the event counters. The index (package flash) wires a Set to its tables
// and translates its API; queries read the tables and the slot table
// (package slots), never a lane.
//
// Contract:
//
//   - Every event of one worker ID goes to one lane (For), and a lane
//     applies its events one at a time in the order they were accepted: on
//     its writer goroutine (a ring, package ring), or on the caller's
//     goroutine holding the lane's lock (a synchronous Set).
//   - Apply copies the event before it returns: the caller MAY reuse its
//     slices at once. An applied queue item keeps no reference to them.
//   - An event is validated whole before anything of it is applied; a
//     rejected event changes no state, is counted (under EventsRejected,
//     its reason and its kind) and goes to the reject handler.
//   - A worker gets a slot only once its first event is valid, and loses
//     it (RemoveWorker) only after its bits are cleared. The directory
//     (worker → slot) is copied on write: readers load it without a lock.
//   - Close applies everything accepted before it, then stops the writers;
//     later events are rejected with ErrClosed.
//   - Predictions (predict.go) are a second layer of each worker's blocks,
//     in tables of their own: a lane applies a prediction, and an expiry, at
//     the time of its call (carried in the queue), in call order, so its
//     predicted blocks are what the reference model computes. A worker's
//     predicted blocks are a tree whose bits are set parent first and
//     cleared children first (expiry, the cap, a Removed content and what
//     lies below it), so a reader sees them prefix-closed. A Set with
//     predictions has each lane drop what expired every ExpiryTick.
//   - Counters only grow; a counter's index is the position of its field
//     in flash.Stats, which holds them in that order.
package lane
