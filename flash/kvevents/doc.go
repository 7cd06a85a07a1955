// Package kvevents feeds a flash index from inference engines' KV-cache
// events, as vLLM and SGLang publish them over ZMQ. It lives in its own
// module so that the index itself depends on no ZMQ, msgpack or Prometheus
// code.
//
//	ix := flash.New(flash.WithBlockSize(16))
//	sub := kvevents.New(ix)
//	defer sub.Close()
//	sub.Subscribe(kvevents.Endpoint{Addr: "tcp://10.0.0.7:5557", Replay: "tcp://10.0.0.7:5558"})
//
// # Wire format
//
// A publisher sends multipart messages [topic, sequence number (8 bytes,
// big-endian), payload]; the payload is the msgpack array [timestamp,
// [events…], data_parallel_rank]. Events are arrays tagged by their first
// element: [BlockStored, block_hashes, parent_block_hash, token_ids,
// block_size, lora_id, medium, lora_name, …], [BlockRemoved, block_hashes,
// medium, …], [AllBlocksCleared]. Fields are read by position: trailing
// fields may be missing (older engines) or more (newer ones: skipped). An
// event with an unknown tag is skipped and counted (Batch.Unknown). Decode
// allocates at most MaxAllocFactor bytes per payload byte. Block hashes may be
// unsigned or signed 64-bit integers (taken as their 64 bits) or bytes (the
// low 64 bits: the last 8 bytes, big-endian). The optional replay socket is
// a ROUTER: a request [start seq] is answered with [seq, payload] for every
// batch it still holds from there on, then [-1, empty].
//
// # Mapping to the index
//
//   - Worker: Endpoint.WorkerID (the endpoint's Worker, or a hash of its
//     address) with the batch's data_parallel_rank, or Endpoint.DPRank when
//     the batch has none. DPEndpoints lays out ranks that publish on
//     consecutive ports, as vLLM does, under one worker ID.
//   - BlockStored: engine hashes become external hashes; each block's local
//     hash is computed from its block_size tokens of token_ids with the LoRA
//     seed of lora_name (or of the decimal lora_id when only that is given),
//     exactly as flash.TokenHasher hashes a query. A block_size other than
//     the index's, or token_ids that are not block_size per block, drop the
//     event (ErrBlockSize, ErrTokenCount; counted).
//   - Medium: each Stored and Removed event applies to the index's tier its
//     medium names, through the tier map (WithMedia; by default the names
//     of the index's Config.Tiers, MediaFor), matched without regard to
//     case; an event with no medium (absent or nil) is in the fastest
//     tier. vLLM (its offloading connector), LMCache through vLLM's
//     connectors and SGLang's hierarchical cache publish "GPU" and "CPU"
//     (a few connectors in lower case), so an index whose tiers are named
//     GPU and CPU follows all of them. An event whose medium the map does
//     not name is refused (ErrUnknownMedium) and counted
//     (Stats.UnknownMedium), never applied to another tier: an index of the
//     default tier (the GPU alone) counts an offloading engine's CPU events
//     there and scores the prefix a worker serves from GPU memory.
//
// # Sequence numbers
//
// Each endpoint's sequence is followed on its own goroutine, which hands
// the events to the index's Apply (on an index made with
// flash.WithWriters(0) and flash.WithSyncLanes, that goroutine applies them
// itself, in parallel with endpoints whose workers are in other lanes). On
// the first
// connection, before any live batch, the replay socket (when there is one)
// is asked for everything it holds, so that a router started next to an
// idle engine learns its cache at once. Then, for each live batch:
//
//   - the next number: applied;
//   - a number ahead (batches lost): the replay socket is asked for the
//     missing ones; what it no longer holds is lost: the endpoint's workers
//     are cleared (ResyncGap), since what the lost batches removed is
//     unknown and a router must not send requests to a worker for blocks it
//     may have dropped; the batches the replay still holds then apply from
//     where they start, and the workers fill again;
//   - a number at or below one already received live: the engine restarted
//     (its cache is empty): its workers are cleared (ResyncRestart) and the
//     new run is followed from 0, replaying its start if it was missed;
//   - a number below the next but above the last one received live: a
//     duplicate of a batch the replay delivered, skipped;
//   - the first batch of a stream numbered above 0 (no history was had):
//     the subscriber joined late; it replays from 0 as far as it can and
//     reports what it could not get (ResyncLateJoin).
//
// History that does not reach back to what is missing is still applied:
// blocks it stores are held, and events that refer to blocks from before it
// are rejected (unknown parent) or skipped (unknown remove), so the index
// then holds a subset of the engine's cache, never a block it lacks.
//
// Every resync is counted, logged and passed to WithResyncHandler. A lost
// connection is redialed with exponential backoff and jitter
// (WithBackoff); the sequence check above catches whatever was missed in
// between. Unsubscribe stops one endpoint and takes its workers out of the
// index (RemoveWorker with the last endpoint of a worker ID, else Cleared
// for its ranks); Close stops every goroutine and returns once they are
// gone.
//
// Subpackage flashprom exports the index's and the subscriber's counters to
// Prometheus; kvtest is a loopback stand-in engine for tests; cmd/flashroute
// is a runnable router front end (/route, /metrics).
package kvevents
