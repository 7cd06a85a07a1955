// Package snapshot is the byte format of flash's Dump and Restore: the
// workers' private states, checked on reading against every structural rule
// a worker's state obeys.
//
// Contract: Write writes what Read accepts. Read returns workers whose
// nodes list parents before children, each one position past its parent,
// each (position, sequence hash) once per worker and each engine id once
// per worker, with no node held by nothing unless it has children; or an
// error wrapping ErrSnapshot and no workers. A version this package does
// not know is refused with ErrSnapshot; version 1 is read and checked
// against the sequence-hash chain.
package snapshot
