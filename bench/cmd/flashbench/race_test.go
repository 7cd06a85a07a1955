//go:build race

package main

// raceEnabled: the race detector slows every replay several times.
const raceEnabled = true
