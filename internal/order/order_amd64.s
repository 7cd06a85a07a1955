//go:build amd64 && gc && !purego && !noasm && !race

#include "textflag.h"

// func Prefetch(addr uintptr)
TEXT ·Prefetch(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ       addr+0(FP), AX
	PREFETCHT0 (AX)
	RET

// func PrefetchLines(addr, n uintptr)
//
// A PREFETCHT0 of each of the (addr%64 + n + 63) / 64 lines from addr's,
// counted down, so a range at the top of the address space ends.
TEXT ·PrefetchLines(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ addr+0(FP), AX
	MOVQ n+8(FP), CX
	TESTQ CX, CX
	JEQ  none
	MOVQ AX, DX
	ANDQ $63, DX
	LEAQ 63(CX)(DX*1), CX
	SHRQ $6, CX
	ANDQ $~63, AX

line:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	DECQ CX
	JNE  line

none:
	RET

// func PrefetchAll(addrs []uintptr)
//
// A PREFETCHT0 of each non-zero address, SI stepping through them.
TEXT ·PrefetchAll(SB), NOSPLIT|NOFRAME, $0-24
	MOVQ addrs_base+0(FP), SI
	MOVQ addrs_len+8(FP), CX
	TESTQ CX, CX
	JEQ  done

each:
	MOVQ (SI), AX
	TESTQ AX, AX
	JEQ  next
	PREFETCHT0 (AX)

next:
	ADDQ $8, SI
	DECQ CX
	JNE  each

done:
	RET
