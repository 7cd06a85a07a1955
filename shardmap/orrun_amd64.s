//go:build amd64 && gc && !purego && !noasm && !race

#include "go_asm.h"
#include "textflag.h"

// ORKEY is orRun's step for key R10 (AX its K, BX its H) in the
// table at CX (none: stop), from its home bucket to its slot, and on to
// the next key (JNE next; JMP done after the last). For the key:
//   - probe: f, the bucket's first empty slot (the keys fill a prefix of
//     the slots, so it is 4 less the empty ones, CMP setting the carry for
//     a 0 key) in R13, and s, the key's slot (f when absent, 4 when the
//     bucket is full without it) in R14;
//   - found: the key is there: set mask (SI) in its value, unless it
//     holds a bit of unless (the frame's) already; live counts one more
//     when the value was 0, and the value's store is the release store;
//   - lanes: the value holds a bit of unless: with lanes (lend not 0) and
//     the value a list (top bits 01), lane walks its lanes (CX the shift,
//     AX the lane) to the first that is 0 (empty: want goes there, the
//     value's store the release store) or holds want (held); past the
//     last, or any other value, held;
//   - insert: a new key in the empty slot, when used is below the table's
//     limit: its value, then its key (the release store).
// The slot's byte offset from the slots (DX) is in R14 from found on; a
// probe past a full bucket (rare) loads the slots' byte mask.
#define ORKEY(probe, found, insert, advance, next, lanes, lane, empty) \
	TESTQ CX, CX; \
	JEQ  stop; \
	MOVQ table_base(CX), DX; \
	ANDQ table_bmask(CX), BX; \
	SHLQ $6, BX; \
probe: \
	MOVL $4, R13; \
	CMPQ 0(DX)(BX*1), $1; \
	SBBQ $0, R13; \
	CMPQ 16(DX)(BX*1), $1; \
	SBBQ $0, R13; \
	CMPQ 32(DX)(BX*1), $1; \
	SBBQ $0, R13; \
	CMPQ 48(DX)(BX*1), $1; \
	SBBQ $0, R13; \
	MOVQ R13, R14; \
	CMPQ 48(DX)(BX*1), AX; \
	CMOVQEQ R15, R14; \
	CMPQ 32(DX)(BX*1), AX; \
	CMOVQEQ R12, R14; \
	CMPQ 16(DX)(BX*1), AX; \
	CMOVQEQ R9, R14; \
	CMPQ 0(DX)(BX*1), AX; \
	CMOVQEQ DI, R14; \
	CMPQ R14, $4; \
	JNE  found; \
	ADDQ $64, BX; \
	MOVQ table_mask(CX), R14; \
	SHLQ $4, R14; \
	ANDQ R14, BX; \
	JMP  probe; \
found: \
	CMPQ R14, R13; \
	JEQ  insert; \
	SHLQ $4, R14; \
	ADDQ BX, R14; \
	MOVQ 8(DX)(R14*1), R13; \
	TESTQ unless+48(FP), R13; \
	JNE  lanes; \
	CMPQ R13, $1; \
	ADCQ $0, table_live(CX); \
	ORQ  SI, R13; \
	MOVQ R13, 8(DX)(R14*1); \
	JMP  advance; \
insert: \
	MOVQ table_used(CX), R13; \
	CMPQ R13, table_limit(CX); \
	JGE  stop; \
	SHLQ $4, R14; \
	ADDQ BX, R14; \
	MOVQ SI, 8(DX)(R14*1); \
	MOVQ AX, 0(DX)(R14*1); \
	INCQ table_used(CX); \
	INCQ table_live(CX); \
advance: \
	ADDQ $8, R10; \
	JNE  next; \
	JMP  done; \
lanes: \
	MOVQ lend+80(FP), CX; \
	TESTQ CX, CX; \
	JEQ  held; \
	MOVQ R13, AX; \
	SHRQ $62, AX; \
	CMPQ AX, $1; \
	JNE  held; \
	XORL CX, CX; \
lane: \
	MOVQ R13, AX; \
	SHRQ CX, AX; \
	ANDQ lmask+64(FP), AX; \
	JEQ  empty; \
	CMPQ AX, want+56(FP); \
	JEQ  held; \
	ADDQ lbits+72(FP), CX; \
	CMPQ CX, lend+80(FP); \
	JLT  lane; \
	JMP  held; \
empty: \
	MOVQ want+56(FP), AX; \
	SHLQ CX, AX; \
	ORQ  AX, R13; \
	MOVQ R13, 8(DX)(R14*1); \
	JMP  advance

// func orRun(hot unsafe.Pointer, smask uint64, keys []Key, mask, unless, want, lmask, lbits, lend uint64) (int, *uint64)
//
// orRunGo, in registers. Per key: AX its K, CX its table, DX the table's
// slots, BX the probed bucket's byte offset, R13 the
// bucket's first empty slot (f), R14 the key's slot (s, f when absent, 4
// when the bucket is full without it); R9, R12, R15 and DI hold 1, 2, 3
// and 0 for the conditional moves, and SI the mask. R11 is the keys' end
// (16 bytes each) and R8 that of their positions' pointers in hot (shard
// 0's, 8 bytes each): R10 counts from minus 8 times the keys up to 0, so
// that one add steps both and ends the loop. The value and key stores are plain:
// x86-64 makes them visible in program order (order.Publish).
// With one shard (smask 0) a loop of its own takes each key's table from
// its position's pointer, computing no shard; both loops step by ORKEY.
TEXT ·orRun(SB), NOSPLIT|NOFRAME, $0-104
	MOVQ keys_len+24(FP), R10
	SHLQ $3, R10
	JEQ  done
	MOVQ hot+0(FP), R8
	ADDQ R10, R8
	MOVQ keys_base+16(FP), R11
	LEAQ (R11)(R10*2), R11
	NEGQ R10
	MOVQ mask+40(FP), SI
	MOVL $1, R9
	MOVL $2, R12
	MOVL $3, R15
	XORL DI, DI
	CMPQ smask+8(FP), $0
	JNE  next

	// One shard: a key's table is its position's first.
next1:
	MOVQ 0(R11)(R10*2), AX // K
	TESTQ AX, AX
	JEQ  stop
	MOVQ 8(R11)(R10*2), BX // H
	MOVQ (R8)(R10*1), CX // the table
	ORKEY(probe1, found1, insert1, advance1, next1, lanes1, lane1, empty1)

next:
	MOVQ 0(R11)(R10*2), AX // K
	TESTQ AX, AX
	JEQ  stop
	MOVQ 8(R11)(R10*2), BX // H
	MOVQ BX, CX
	SHRQ $(64-const_maxShardBits), CX
	ANDQ smask+8(FP), CX
	SHLQ $const_hotShift, CX
	ADDQ R10, CX
	MOVQ (R8)(CX*1), CX // the table
	ORKEY(probe, found, insert, advance, next, lanes, lane, empty)

done:
	MOVQ keys_len+24(FP), AX
	MOVQ AX, ret+88(FP)
	MOVQ $0, ret1+96(FP)
	RET

stop:
	XORL AX, AX
	JMP  at

held:
	// The value's word: 8 past its slot (R14 bytes into the slots).
	LEAQ 8(DX)(R14*1), AX

at:
	// The index of key R10, and AX: the word of its value, which held a
	// bit of unless, or nil.
	SARQ $3, R10
	ADDQ keys_len+24(FP), R10
	MOVQ R10, ret+88(FP)
	MOVQ AX, ret1+96(FP)
	RET
