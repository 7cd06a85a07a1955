//go:build race

package arena_test

const raceEnabled = true
