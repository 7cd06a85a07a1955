module github.com/flashindexer/flashindexer/flash/kvevents

go 1.26.0

replace github.com/flashindexer/flashindexer => ../../

require (
	github.com/flashindexer/flashindexer v0.0.0-00010101000000-000000000000
	github.com/go-zeromq/zmq4 v0.17.0
	github.com/zeebo/xxh3 v1.1.0
)

require (
	github.com/bits-and-blooms/bitset v1.29.0 // indirect
	github.com/go-zeromq/goczmq/v4 v4.2.2 // indirect
	github.com/klauspost/cpuid/v2 v2.4.2 // indirect
	github.com/vmihailenco/msgpack/v5 v5.4.1 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)
