//go:build amd64 && gc && !purego && !noasm && !race

#include "go_asm.h"
#include "textflag.h"

// HASHM replaces AX with shardmap.Hash(AX, k0, k1) for an odd k1, using CX
// and DX; k0 and k1 are read where they are (the frame).
#define HASHM(k0, k1) \
	MOVQ AX, CX; \
	ROLQ $32, CX; \
	XORQ k1, CX; \
	XORQ k0, AX; \
	MULQ CX; \
	XORQ DX, AX; \
	MOVQ AX, DX; \
	SHRQ $32, DX; \
	XORQ DX, AX

// IDHASH writes the engine id's hash of block R10 into its pending block
// (idKr's secret in the frame); AX keeps it.
#define IDHASH \
	MOVQ Block_Hash(R8)(R10*1), AX; \
	HASHM(idKr_k0+88(FP), idKr_k1+96(FP)); \
	MOVQ AX, pendingBlock_idh(R9)(R10*1)

// PREFETCHID asks for the home bucket of the id hash in AX: base R13
// plus (hash & bmask R14) buckets.
#define PREFETCHID \
	ANDQ R14, AX; \
	SHLQ $const_idBucketShift, AX; \
	PREFETCHT0 (R13)(AX*1)

// SEQKEY writes block R10's key: the sequence hash in R11, then its hash
// under seqKr (its secret in the frame).
#define SEQKEY \
	MOVQ R11, 0(R12)(R10*1); \
	MOVQ R11, AX; \
	HASHM(seqKr_k0+104(FP), seqKr_k1+112(FP)); \
	MOVQ AX, 8(R12)(R10*1)

// CHAIN replaces R11 with chain.Chain(R11, the Local of block R10): XXH3's
// 16-byte path with its seed's bitflips (BX and SI), and its multiplier
// (R15). hi + bswap(lo) + 16 is summed beside the multiply, off the
// chain's critical path.
#define CHAIN \
	MOVQ BX, CX; \
	XORQ Block_Local(R8)(R10*1), CX; \
	MOVQ SI, AX; \
	XORQ R11, AX; \
	MOVQ AX, DI; \
	BSWAPQ DI; \
	LEAQ 16(CX)(DI*1), DI; \
	MULQ CX; \
	XORQ DX, AX; \
	ADDQ DI, AX; \
	MOVQ AX, DI; \
	SHRQ $37, DI; \
	XORQ DI, AX; \
	IMULQ R15, AX; \
	MOVQ AX, R11; \
	SHRQ $32, AX; \
	XORQ AX, R11

// func prepKeysAsm(keys []shardmap.Key, pending []pendingBlock, blocks []Block, prev uint64, root bool, idKr, seqKr shardmap.Keyer, base unsafe.Pointer, bmask uint64, prefetch bool)
//
// prepKeysGo in registers for odd secrets, its two loops as one: per
// block, the engine id's hash (and its bucket's prefetch) and the sequence
// key. The ids' hashes are independent of each other and fill the chain's
// latency (a multiply and a dependent multiply a block). The blocks, the
// pending blocks and the keys are 16 bytes each: R8, R9 and R12 are their
// ends, and R10 counts from minus their length in bytes up to 0, so that
// one add steps all three and ends the loop. R11 holds the chain; R13 and
// R14 are base and bmask; the secrets are read from the frame.
TEXT ·prepKeysAsm(SB), NOSPLIT|NOFRAME, $0-137
	MOVQ blocks_len+56(FP), R10
	SHLQ $4, R10
	JEQ  done
	MOVQ blocks_base+48(FP), R8
	ADDQ R10, R8
	MOVQ pending_base+24(FP), R9
	ADDQ R10, R9
	MOVQ keys_base+0(FP), R12
	ADDQ R10, R12
	NEGQ R10
	MOVQ $const_chainFlip2, BX
	MOVQ $const_chainFlip1, SI
	MOVQ $const_chainPrime, R15
	MOVQ base+120(FP), R13
	MOVQ bmask+128(FP), R14
	MOVQ prev+72(FP), R11
	CMPB root+80(FP), $0
	JEQ  chained

	// A root batch's first block: its sequence hash is its local hash.
	IDHASH
	CMPB prefetch+136(FP), $0
	JEQ  rootkey
	PREFETCHID

rootkey:
	MOVQ Block_Local(R8)(R10*1), R11
	SEQKEY
	ADDQ $16, R10
	JEQ  done

chained:
	CMPB prefetch+136(FP), $0
	JNE  prefetched

plain:
	IDHASH
	CHAIN
	SEQKEY
	ADDQ $16, R10
	JNE  plain
	RET

prefetched:
	IDHASH
	PREFETCHID
	CHAIN
	SEQKEY
	ADDQ $16, R10
	JNE  prefetched

done:
	RET

// func claimRun(base unsafe.Pointer, bmask uint64, blocks []Block, pending []pendingBlock, keys []shardmap.Key, chunks [][]node, pos, i int) (int, int)
//
// claimRunGo in registers, from block i: R8 and R9 are the blocks' and
// the pending blocks' ends, and R10 counts from minus the bytes of those
// from i on up to 0 (both are 16 bytes a block); R11 counts i as its
// claim, idClaim|i, and R15 the dups; the table's base is in R12, bmask in
// R13, 0x0101… in R14 (a byte times it fills a word), and X3 is 0. A bucket's first 16
// bytes (X1) are its 12 tags, its overflow count and 3 bytes of padding,
// which are 0: one byte compare with the tag finds the slots that have
// it, one with 0 the free slots and whether the count is 0.
TEXT ·claimRun(SB), NOSPLIT|NOFRAME, $0-144
	MOVQ base+0(FP), R12
	MOVQ bmask+8(FP), R13
	MOVQ i+120(FP), R11
	MOVQ blocks_len+24(FP), AX
	SHLQ $4, AX
	MOVQ blocks_base+16(FP), R8
	ADDQ AX, R8
	MOVQ pending_base+40(FP), R9
	ADDQ AX, R9
	MOVQ R11, R10
	SHLQ $4, R10
	SUBQ AX, R10
	ORQ  $const_idClaim, R11
	MOVQ $const_tagSpread, R14
	XORL R15, R15
	PXOR X3, X3
	TESTQ R10, R10
	JEQ  done

loop:
	MOVQ Block_Hash(R8)(R10*1), AX
	TESTQ AX, AX
	JEQ  done // id 0: claimID's
	MOVQ pendingBlock_idh(R9)(R10*1), BX
	MOVQ BX, CX
	ANDQ R13, CX
	SHLQ $const_idBucketShift, CX
	ADDQ R12, CX // the home bucket
	MOVOU (CX), X1

	// idTag: h>>56, 1 for 0 (which alone is below 1, and carries).
	SHRQ $56, BX
	CMPQ BX, $1
	ADCQ $0, BX

	// The slots with the tag: an id that may be this one.
	MOVQ BX, DX
	IMULQ R14, DX
	MOVQ DX, X0
	PUNPCKLQDQ X0, X0
	PCMPEQB X1, X0
	PMOVMSKB X0, DX
	ANDL $(1<<const_idBucketSlots-1), DX
	JNE  dup

	// The free slots (bits 0–11), and the overflow count's byte (bit 12):
	// an id past this bucket needs a probe. Both are there when the bits
	// up to 12 are more than bit 12 alone.
	MOVO X3, X0
	PCMPEQB X1, X0
	PMOVMSKB X0, DX
	ANDL $(1<<(const_idBucketSlots+1)-1), DX
	CMPL DX, $(1<<const_idBucketSlots)
	JLS  done // full, or ids past it
	BSFL DX, DX

	// put: the tag, and the claim of block i.
	MOVB BX, (CX)(DX*1)
	MOVL R11, idBucket_vals(CX)(DX*4)

	// The slot, the value word's index in the table.
	LEAQ idBucket_vals(CX)(DX*4), CX
	SUBQ R12, CX
	SHRQ $2, CX
	MOVL CX, pendingBlock_slot(R9)(R10*1)
	MOVL $0, pendingBlock_held(R9)(R10*1)

next:
	INCQ R11
	ADDQ $16, R10
	JNE  loop

done:
	ANDQ $~const_idClaim, R11
	MOVQ R11, ret+128(FP)
	MOVQ R15, ret1+136(FP)
	RET

dup:
	// The first slot with the tag (DX's lowest bit) holds v (SI): a dup
	// when v names a node (not an alias, not a claim) whose own id is
	// this one (AX), at pos+i, of the block's content.
	BSFL DX, DX
	MOVL idBucket_vals(CX)(DX*4), SI
	TESTL $(const_idAlias|const_idClaim), SI
	JNE  done
	MOVL SI, DI
	SHRL $const_nodeChunkBits, DI
	MOVQ chunks_base+88(FP), BX
	MOVQ (BX)(DI*8), DI
	MOVL SI, BX
	ANDL $(1<<const_nodeChunkBits-1), BX
	SHLQ $const_nodeShift, BX
	ADDQ BX, DI // the node
	CMPQ node_ext(DI), AX
	JNE  done
	MOVQ R11, BX
	ANDQ $~const_idClaim, BX // i
	MOVQ pos+112(FP), AX
	ADDQ BX, AX
	CMPL node_pos(DI), AX
	JNE  done
	SHLQ $4, BX
	ADDQ keys_base+64(FP), BX
	MOVQ 0(BX), AX // keys[i].K
	CMPQ node_seq(DI), AX
	JNE  done

	// Its slot, as a claim's, and its node.
	LEAQ idBucket_vals(CX)(DX*4), CX
	SUBQ R12, CX
	SHRQ $2, CX
	MOVL CX, pendingBlock_slot(R9)(R10*1)
	INCL SI
	MOVL SI, pendingBlock_held(R9)(R10*1)
	INCQ R15
	JMP  next
