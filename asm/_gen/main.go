// Command _gen generates the asm package's kernels with avo:
//
//	cd asm/_gen && GOWORK=off go run . -out ../kernels_amd64.s -pkg asm
//
// CI regenerates them and fails on any difference from the committed files.
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("amd64,gc,!purego,!noasm,!race")
	subsetAVX512()
	subsetAVX2()
	Generate()
}

// subsetAVX512: a ⊆ b, 8 words a step, stopping at the first step with a
// bit of a outside b.
func subsetAVX512() {
	TEXT("subsetAVX512", NOSPLIT, "func(a, b []uint64) bool")
	Doc("subsetAVX512 reports whether a AND NOT b is zero over len(a) words; b is at least as long. Needs AVX512F, AVX512BW (KMOVQ) and BMI2 (SHLXQ).")
	a, b, n := args()
	k := K()
	Label("loop8")
	CMPQ(n, Imm(8))
	JB(LabelRef("tail"))
	x, y := ZMM(), ZMM()
	VMOVDQU64(Mem{Base: b}, x)
	VPANDNQ(Mem{Base: a}, x, y) // y = ^b & a
	VPTESTMQ(y, y, k)
	KORTESTW(k, k) // AVX512F; KORTESTB would need AVX512DQ
	JNZ(LabelRef("no"))
	ADDQ(Imm(64), a)
	ADDQ(Imm(64), b)
	SUBQ(Imm(8), n)
	JMP(LabelRef("loop8"))
	Label("tail")
	TESTQ(n, n)
	JZ(LabelRef("yes"))
	km := tailMask(n)
	p, q := ZMM(), ZMM()
	VMOVDQU64_Z(Mem{Base: b}, km, p)
	VMOVDQU64_Z(Mem{Base: a}, km, q)
	VPANDNQ(q, p, q) // q = ^p & q
	VPTESTMQ(q, q, k)
	KORTESTW(k, k)
	JNZ(LabelRef("no"))
	Label("yes")
	VZEROUPPER()
	retBool(true)
	Label("no")
	VZEROUPPER()
	retBool(false)
}

// subsetAVX2: a ⊆ b, 4 words a step with VPTEST, the tail word by word.
func subsetAVX2() {
	TEXT("subsetAVX2", NOSPLIT, "func(a, b []uint64) bool")
	Doc("subsetAVX2 reports whether a AND NOT b is zero over len(a) words; b is at least as long. Needs AVX2.")
	a, b, n := args()
	Label("loop4")
	CMPQ(n, Imm(4))
	JB(LabelRef("tail"))
	x, y := YMM(), YMM()
	VMOVDQU(Mem{Base: b}, x)
	VPANDN(Mem{Base: a}, x, y) // y = ^b & a
	VPTEST(y, y)
	JNZ(LabelRef("no"))
	ADDQ(Imm(32), a)
	ADDQ(Imm(32), b)
	SUBQ(Imm(4), n)
	JMP(LabelRef("loop4"))
	Label("tail")
	VZEROUPPER()
	Label("tailw")
	TESTQ(n, n)
	JZ(LabelRef("yes"))
	w := GP64()
	MOVQ(Mem{Base: b}, w)
	NOTQ(w)
	ANDQ(Mem{Base: a}, w)
	JNZ(LabelRef("nov"))
	ADDQ(Imm(8), a)
	ADDQ(Imm(8), b)
	DECQ(n)
	JMP(LabelRef("tailw"))
	Label("yes")
	retBool(true)
	Label("no")
	VZEROUPPER()
	Label("nov")
	retBool(false)
}

func retBool(v bool) {
	r := GP8()
	if v {
		MOVB(U8(1), r)
	} else {
		MOVB(U8(0), r)
	}
	Store(r, ReturnIndex(0))
	RET()
}

// args loads the kernels' arguments: the bases of a and b, and len(a).
func args() (a, b, n reg.Register) {
	return Load(Param("a").Base(), GP64()), Load(Param("b").Base(), GP64()), Load(Param("a").Len(), GP64())
}

// tailMask returns a mask register with the low n bits set: the load mask of
// the last n < 8 words.
func tailMask(n reg.Register) reg.Register {
	m := GP64()
	MOVQ(U64(1), m)
	SHLXQ(n, m, m)
	DECQ(m)
	k := K()
	KMOVQ(m, k)
	return k
}
