package baseline_test

import (
	"testing"

	"github.com/flashindexer/flashindexer/bench/baseline"
	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
)

type backend struct {
	name string
	make flashtest.Factory
	// blind marks the collision-blind generations.
	blind bool
}

func backends() []backend {
	return []backend{
		{"naive", func(t testing.TB, c flash.Config) flash.Index { return baseline.NewNaive(c) }, true},
		{"actor", func(t testing.TB, c flash.Config) flash.Index { return baseline.NewActor(c) }, true},
		{"inverted", func(t testing.TB, c flash.Config) flash.Index { return baseline.NewInverted(c) }, true},
		{"radix", func(t testing.TB, c flash.Config) flash.Index { return baseline.NewRadix(c) }, false},
		{"concurrent-radix", func(t testing.TB, c flash.Config) flash.Index { return baseline.NewConcurrentRadix(c, 2) }, false},
	}
}

func TestBaselines_Conformance(t *testing.T) {
	for _, b := range backends() {
		t.Run("impl="+b.name, func(t *testing.T) {
			var o flashtest.Options
			if b.blind {
				o.Skip = baseline.BlindCases
			}
			flashtest.Run(t, b.make, o)
		})
	}
}

// The cases the blind generations skip do fail for them: the list is not a
// way to hide a bug.
func TestBaselines_BlindCasesFail(t *testing.T) {
	for _, b := range backends() {
		if !b.blind {
			continue
		}
		for name := range baseline.BlindCases {
			if name == "random_differential" || name == "tiers_random_differential" {
				continue
			}
			if msg := flashtest.Check(t, name, b.make); msg == "" {
				t.Errorf("impl=%s passes %s, listed as blind", b.name, name)
			} else {
				t.Logf("impl=%s %s: %s", b.name, name, msg)
			}
		}
	}
}
