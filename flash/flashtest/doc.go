// Package flashtest is the conformance suite for flash.Index implementations,
// in the spirit of testing/fstest: Run puts any backend through every case of
// the semantics, against hand-written expectations and against the reference
// model (flash/model), and FuzzOps decodes fuzz bytes into events and queries
// whose every answer is compared with the model.
//
// A backend's test calls
//
//	flashtest.Run(t, func(t testing.TB, cfg flash.Config) flash.Index { return mybackend.New(cfg) })
//
// Backends that are blind by design to some cases (chunk-hash collisions)
// pass their names in Options.Skip with the reason; Cases lists the names.
//
// The suite calls Flush before every query and every look at Stats, so it
// tests asynchronous indexes as well as synchronous ones.
package flashtest
