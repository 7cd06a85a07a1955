module github.com/flashindexer/flashindexer/bench

go 1.26.0

replace github.com/flashindexer/flashindexer => ../

require github.com/flashindexer/flashindexer v0.0.0-00010101000000-000000000000

require (
	github.com/bits-and-blooms/bitset v1.29.0 // indirect
	github.com/klauspost/cpuid/v2 v2.4.2 // indirect
	github.com/zeebo/xxh3 v1.1.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
