//go:build amd64 && gc && !purego && !noasm

#include "textflag.h"

// func Prefetch(addr uintptr)
TEXT ·Prefetch(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ       addr+0(FP), AX
	PREFETCHT0 (AX)
	RET

// func StoreRelease(p *uint64, v uint64)
TEXT ·StoreRelease(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), CX
	MOVQ CX, (AX)
	RET

// func PrefetchAll(addrs []uintptr)
TEXT ·PrefetchAll(SB), NOSPLIT|NOFRAME, $0-24
	MOVQ addrs_base+0(FP), AX
	MOVQ addrs_len+8(FP), CX
	TESTQ CX, CX
	JEQ  done
loop:
	MOVQ       (AX), DX
	PREFETCHT0 (DX)
	ADDQ       $8, AX
	DECQ       CX
	JNE        loop
done:
	RET
