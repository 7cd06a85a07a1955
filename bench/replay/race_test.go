//go:build race

package replay

// raceEnabled: the race detector slows every replay several times.
const raceEnabled = true
