// Package worker is the private state of the workers of one lane and the
// write path that keeps their bits in the shared index (package entry)
// exact: Stored, Removed and Cleared applied to one worker.
//
// A worker has a node per content (position, sequence hash) it holds or
// held, with its first engine id, its parent node, a count of its children
// and of its engine ids, and an engine-id map (engine id → node, keeping no
// keys: ids.go). A worker is simple while every node is held by exactly one
// engine id and every node is attached: storing a block then costs one
// parent lookup, one id claim, one shared-entry write and one node. A
// second engine id for one content, or a removal in the middle of a chain,
// makes it complex (a content map and lists of children appear) until it
// is cleared.
//
// Invariants, between two calls of the Owner, for every worker w (the
// flash_invariants build checks them all after every event: Check):
//
//   - A node is attached if and only if it is held (an engine id names it)
//     and it is at position 0 or its parent is attached.
//   - w's bit is set in the entry (p, s) if and only if w has an attached
//     node of content (p, s): the positions w holds for any query are
//     prefix-closed, which the jump search's subset test requires.
//   - Every engine id of w names one live node of w; a node's engine ids
//     are its first (kept in the node) and aliases. The number of ids is
//     the sum of the nodes' references.
//   - A node that is no longer held but has children stays (a ghost), so
//     that storing its content again re-attaches the held part below it; a
//     ghost without children is freed, and so are its ghost ancestors.
//   - A simple worker has no ghost, no alias, and every node attached.
//
// Contract:
//
//   - An Owner and the states it changes MUST be used by one goroutine at a
//     time: the lane's writer, or the caller holding the lane.
//   - Prepare changes nothing a reader or another worker can see, and
//     leaves the worker as it was when it rejects the event; Commit cannot
//     fail. Between the two the caller MAY give a new worker its slot.
//   - Commit attaches a batch's blocks parent first, one at a time; a
//     concurrent query MAY see any prefix of them.
package worker
