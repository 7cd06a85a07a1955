package model_test

import (
	"testing"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/flashtest"
	"github.com/flashindexer/flashindexer/flash/model"
)

func factory(t testing.TB, cfg flash.Config) flash.Index { return model.New(cfg) }

func TestModel_Conformance(t *testing.T) { flashtest.Run(t, factory) }

func FuzzModel(f *testing.F) {
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d"))
	f.Add([]byte("seed corpus: stores, removes and queries over a few prompts"))
	f.Fuzz(func(t *testing.T, data []byte) { flashtest.FuzzOps(t, factory, data) })
}
