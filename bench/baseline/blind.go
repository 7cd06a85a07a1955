package baseline

// BlindCases lists the conformance cases (flashtest.Cases) that the
// collision-blind generations (Naive, Actor, Inverted) cannot pass, with the
// reason; the suite skips them for those backends. Every other case, and
// every case for Radix and ConcurrentRadix, passes.
var BlindCases = map[string]string{
	"diverge_then_same_chunk":   "the worker holds the diverging chunk under another prefix; a local-hash match cannot tell the prefixes apart",
	"hash_conflict_rejected":    "the final query repeats block 2's chunk at position 6, which the worker holds at position 2",
	"local_hash_zero":           "the query {0, 0} finds the chunk 0 the worker holds at position 2 and counts position 1 as held",
	"random_differential":       "its prompts are drawn from a 4-chunk alphabet, so the same chunk recurs under other prefixes everywhere",
	"tiers_random_differential": "the same alphabet as random_differential, in tiers",
}
