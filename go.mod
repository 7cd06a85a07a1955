module github.com/flashindexer/flashindexer

go 1.26.0

require (
	github.com/bits-and-blooms/bitset v1.29.0
	github.com/klauspost/cpuid/v2 v2.4.2
	github.com/zeebo/xxh3 v1.1.0
	golang.org/x/sys v0.50.0
)
