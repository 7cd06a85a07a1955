package search

import (
	"sync"
	"testing"
	"unsafe"
)

// Counts from several goroutines, folds among them, and queries large
// enough to count straight into the totals add up exactly; sums read
// meanwhile never go back.
func TestTally_Concurrent(t *testing.T) {
	if unsafe.Sizeof(stripe{}) != 64 {
		t.Fatalf("a stripe is %d bytes, not a cache line", unsafe.Sizeof(stripe{}))
	}
	var ta Tally
	const goroutines, each = 4, 20000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				count(&ta, uintptr(g*64), 1+i%7, deepestOf(i))
				if i%50 == 0 {
					count(&ta, uintptr(g*64), bigBlocks+i, i%3)
				}
			}
		}()
	}
	stop := make(chan struct{})
	done := make(chan error)
	go func() {
		var lq, lb, lh, lm uint64
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			q, b, h, m := ta.Sum()
			if q < lq || b < lb || h < lh || m < lm {
				done <- errBack
				return
			}
			lq, lb, lh, lm = q, b, h, m
		}
	}()
	wg.Wait()
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var wantQ, wantB, wantH, wantM uint64
	for i := range each {
		wantQ, wantB = wantQ+1, wantB+uint64(1+i%7)
		if d := deepestOf(i); d > 0 {
			wantH, wantM = wantH+1, wantM+uint64(d)
		}
		if i%50 == 0 {
			wantQ, wantB = wantQ+1, wantB+uint64(bigBlocks+i)
			if i%3 > 0 {
				wantH, wantM = wantH+1, wantM+uint64(i%3)
			}
		}
	}
	q, b, h, m := ta.Sum()
	if q != goroutines*wantQ || b != goroutines*wantB || h != goroutines*wantH || m != goroutines*wantM {
		t.Fatalf("Sum = %d queries, %d blocks, %d hits, %d matched; want %d, %d, %d, %d", q, b, h, m,
			goroutines*wantQ, goroutines*wantB, goroutines*wantH, goroutines*wantM)
	}
}

// deepestOf is query i's deepest match in TestTally_Concurrent: none for
// one query in three.
func deepestOf(i int) int { return (i % 3) * (1 + i%5) }

// Every part folds before it fills: many queries of the largest packed
// size, each a hit as deep as it is long.
func TestTally_FoldsEveryPart(t *testing.T) {
	var ta Tally
	const n = 5000
	for range n {
		count(&ta, 0, bigBlocks-1, bigBlocks-1)
	}
	q, b, h, m := ta.Sum()
	if q != n || h != n || b != n*(bigBlocks-1) || m != n*(bigBlocks-1) {
		t.Fatalf("Sum = %d, %d, %d, %d; want %d, %d, %d, %d", q, b, h, m, n, n*(bigBlocks-1), n, n*(bigBlocks-1))
	}
	if ta[0].queries.Load() == 0 {
		t.Fatal("no fold")
	}
}

type tallyError string

func (e tallyError) Error() string { return string(e) }

const errBack = tallyError("a sum went back")

func count(t *Tally, key uintptr, blocks, deepest int) {
	switch {
	case blocks >= BigBlocks:
		t.CountBig(key, blocks, deepest)
	case t.Count(key, blocks, deepest):
		t.Fold(key)
	}
}
