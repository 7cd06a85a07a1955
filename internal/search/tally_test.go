package search

import (
	"sync"
	"testing"
	"unsafe"
)

// Counts from several goroutines, folds among them, add up exactly; sums
// read meanwhile never go back.
func TestTally_Concurrent(t *testing.T) {
	if unsafe.Sizeof(stripe{}) != 64 {
		t.Fatalf("a stripe is %d bytes, not a cache line", unsafe.Sizeof(stripe{}))
	}
	var ta Tally
	const goroutines, each = 4, 20000
	big := foldBlocks / 64 // a fold every 64 queries of a stripe
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				count(&ta, uintptr(g*64), 1+i%7)
				if i%3 == 0 {
					hit(&ta, uintptr(g*64), 1+i%5)
				}
				if i%50 == 0 {
					count(&ta, uintptr(g*64), big)
					hit(&ta, uintptr(g*64), big)
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
	var wantB, wantH, wantM uint64
	for i := range each {
		wantB += uint64(1 + i%7)
		if i%3 == 0 {
			wantH, wantM = wantH+1, wantM+uint64(1+i%5)
		}
		if i%50 == 0 {
			wantB += uint64(big)
			wantH, wantM = wantH+1, wantM+uint64(big)
		}
	}
	q, b, h, m := ta.Sum()
	if q != goroutines*(each+each/50) || b != goroutines*wantB || h != goroutines*wantH || m != goroutines*wantM {
		t.Fatalf("Sum = %d queries, %d blocks, %d hits, %d matched; want %d, %d, %d, %d", q, b, h, m,
			goroutines*(each+each/50), goroutines*wantB, goroutines*wantH, goroutines*wantM)
	}
}

// The queries' part folds before it fills.
func TestTally_FoldsQueries(t *testing.T) {
	if testing.Short() {
		t.Skip("8M queries")
	}
	var ta Tally
	const n = foldQueries + 1000
	for range n {
		count(&ta, 0, 1)
	}
	if q, b, _, _ := ta.Sum(); q != n || b != n {
		t.Fatalf("Sum = %d, %d; want %d", q, b, n)
	}
	if ta[0].queries.Load() == 0 {
		t.Fatal("no fold")
	}
}

type tallyError string

func (e tallyError) Error() string { return string(e) }

const errBack = tallyError("a sum went back")

func count(t *Tally, key uintptr, blocks int) {
	if Folds(t.Count(key, blocks)) {
		t.Fold(key)
	}
}

func hit(t *Tally, key uintptr, depth int) {
	if t.Hit(key, depth) {
		t.Fold(key)
	}
}
