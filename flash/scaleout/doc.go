// Package scaleout carries engines' KV events to router replicas through
// NATS JetStream, so that every replica holds the whole index and a new or
// restarted one catches up from a snapshot and the stream.
//
//   - A Relay publishes events to a stream, a subject per worker, each with
//     a message ID made from its endpoint and the engine's sequence number
//     (MsgID): JetStream keeps one copy of a message published twice within
//     the stream's duplicate window, so a relay that restarts and publishes
//     again from an earlier sequence adds nothing.
//   - A Replica consumes the stream in order into its index and knows the
//     last stream sequence it applied. Snapshot stores the index's Dump with
//     that sequence in an object store; Restore loads the newest snapshot,
//     and Run then consumes from the next sequence.
//   - A snapshot is usable while the stream still holds the message after
//     it: the stream's retention (MaxAge, MaxMsgs) must outlast the
//     snapshot period, and Restore returns ErrSnapshotTooOld when it does
//     not.
//
// Events travel in a compact binary form (AppendEvent, DecodeEvent); an
// event of a slower tier than the fastest in a form of its own, so that
// replicas from before tiers read every event of the fastest.
package scaleout
