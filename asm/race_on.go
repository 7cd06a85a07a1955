//go:build race

package asm

import (
	"runtime"
	"unsafe"
)

const raceEnabled = true

// raceRead announces to the race detector the words an assembly kernel reads.
func raceRead(a []uint64) {
	if len(a) > 0 {
		runtime.RaceReadRange(unsafe.Pointer(&a[0]), 8*len(a))
	}
}
