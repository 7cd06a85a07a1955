package ring

import (
	"sync"
	"sync/atomic"
	"testing"
)

func put(t *testing.T, r *Ring[int], v int, try bool) error {
	t.Helper()
	it, err := r.Reserve(try)
	if err != nil {
		return err
	}
	*it = v
	r.Commit()
	return nil
}

// Items from several producers apply once each, each producer's in its
// order; Flush waits for every item committed before it.
func TestRing_OrderAndFlush(t *testing.T) {
	var closed atomic.Bool
	var r Ring[int]
	r.Init(8, &closed)
	var got []int
	done := make(chan struct{})
	go func() { r.Run(func(v *int) { got = append(got, *v); *v = -1 }); close(done) }()
	const producers, each = 4, 1000
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := put(t, &r, p*each+i, false); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	r.Flush()
	if n := len(got); n != producers*each {
		t.Fatalf("after Flush, %d items applied, want %d", n, producers*each)
	}
	last := make([]int, producers)
	for p := range last {
		last[p] = -1
	}
	for _, v := range got {
		p, i := v/each, v%each
		if i <= last[p] {
			t.Fatalf("producer %d: item %d after %d", p, i, last[p])
		}
		last[p] = i
	}
	r.Stop()
	<-done
	if err := put(t, &r, 1, false); err != ErrClosed {
		t.Fatalf("after Stop: %v, want ErrClosed", err)
	}
}

// A full ring refuses a Reserve that must not wait; a closed flag refuses
// every Reserve; Len counts what waits; Stop lets Run drain it.
func TestRing_FullClosedDrain(t *testing.T) {
	var closed atomic.Bool
	var r Ring[int]
	r.Init(2, &closed)
	for i := range 2 {
		if err := put(t, &r, i, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := put(t, &r, 2, true); err != ErrFull {
		t.Fatalf("full ring: %v, want ErrFull", err)
	}
	if n := r.Len(); n != 2 {
		t.Fatalf("Len %d, want 2", n)
	}
	closed.Store(true)
	if err := put(t, &r, 3, false); err != ErrClosed {
		t.Fatalf("closed: %v, want ErrClosed", err)
	}
	r.Stop()
	var got []int
	r.Run(func(v *int) { got = append(got, *v) })
	if len(got) != 2 || got[0] != 0 || got[1] != 1 || r.Len() != 0 {
		t.Fatalf("drained %v, Len %d; want [0 1], 0", got, r.Len())
	}
}
