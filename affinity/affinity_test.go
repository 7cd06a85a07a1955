package affinity

import (
	"runtime"
	"slices"
	"testing"
)

func TestOrder_SpreadsOverCoresFirst(t *testing.T) {
	// 4 cores with 2 SMT threads, Linux-style numbering: cpu i and i+4 are siblings.
	coreOf := func(c int) core { return core{0, c % 4} }
	got := order([]int{0, 1, 2, 3, 4, 5, 6, 7}, coreOf)
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
	// Adjacent numbering: cpu 2k and 2k+1 are siblings.
	coreOf = func(c int) core { return core{0, c / 2} }
	got = order([]int{0, 1, 2, 3, 4, 5}, coreOf)
	if want := []int{0, 2, 4, 1, 3, 5}; !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
}

func TestPlan_AndPin(t *testing.T) {
	plan := Plan(5)
	if runtime.GOOS == "linux" && len(plan) != 5 {
		t.Fatalf("Plan(5) = %v", plan)
	}
	allowed := Allowed()
	for _, c := range plan {
		if !slices.Contains(allowed, c) {
			t.Fatalf("planned cpu %d not allowed (%v)", c, allowed)
		}
	}
	if !Supported() || len(plan) == 0 {
		t.Skip("pinning not supported here")
	}
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := Pin(plan[0])
		if err == nil {
			if got := Allowed(); len(got) != 1 || got[0] != plan[0] {
				t.Errorf("after Pin(%d) the thread may run on %v", plan[0], got)
			}
		}
		done <- err
	}()
	if err := <-done; err != nil {
		t.Skipf("pinning not permitted here: %v", err)
	}
	t.Log(Describe())
}
