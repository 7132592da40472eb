// emitDefault's fast path in WebAssembly: the steps of emitDefaultGo
// (collector.go), which stays the reference for what is written. Registers
// are the function's i64 locals:
//
//	R0 r            R5 p (where the op starts)   R10 value data word
//	R1 si           R6 n (op bytes written)      R11 string length / int
//	R2 nv           R7 next values element       R12 string bytes
//	R3 at = len(r.out)   R8 values left          R13 destination
//	R4 room = cap(r.out)-at   R9 value type word R14, R15 scratch
//
// Every store may write up to 8 bytes past what it means to, which the
// room checks (8 spare bytes) allow for, as in emitDefaultGo.

#include "go_asm.h"
#include "textflag.h"
#include "funcdata.h"

// STORE_TAG_LEN writes a value's tag byte (kind) and its u32 length (R11)
// at q = p+n (R5+R6), and leaves q in R13. It stores 8 bytes: the
// caller's room check covers them.
#define STORE_TAG_LEN(kind) Get R5; Get R6; I64Add; Tee R13; I32WrapI64; Get R11; I64Const $8; I64Shl; I64Const kind; I64Or; I64Store $0

// func emitDefault(r *runtime, msgID, anchor uint64, values []any)
TEXT ·emitDefault(SB), NOSPLIT, $48-48
	NO_LOCAL_POINTERS
	MOVD r+0(FP), R0
	MOVD values_len+32(FP), R2

slow:
	Block
		// The checks of the fast path, each going to slow.
		Get R0
		I32WrapI64
		I64Load $runtime_defStream
		Tee R1
		I64Const $0
		I64LtS
		BrIf slow

		Get R2
		Get R0
		I32WrapI64
		I64Load $runtime_defFields
		I64Ne
		BrIf slow

		Get R0
		I32WrapI64
		I32Load8U $runtime_canEmit
		I32Eqz
		BrIf slow

		Get R0
		I32WrapI64
		I64Load $(runtime_out+8)
		Tee R3
		I64Const $const_asmOutFlush
		I64GeS
		BrIf slow

		Get R0
		I32WrapI64
		I64Load $(runtime_out+16)
		Get R3
		I64Sub
		Tee R4
		I64Const $35 // emitHeader + 10 + 8
		I64LtS
		BrIf slow

		Get R0
		I32WrapI64
		I64Load $runtime_out
		Get R3
		I64Add
		Set R5

		// op, stream, direct = none, msgID: one 8-byte store.
		Get R5
		I32WrapI64
		Get R1
		I64Const $8
		I64Shl
		I64Const $0xffffffff000000
		I64Or
		I64Const $const_asmOpEmit
		I64Or
		I64Load msgID+8(FP)
		I64Const $56
		I64Shl
		I64Or
		I64Store $0

		I64Load anchor+16(FP)
		I64Eqz
		If
			// msgID's rest, no anchors, value count.
			Get R5
			I32WrapI64
			I64Load msgID+8(FP)
			I64Const $8
			I64ShrU
			I64Store $8

			Get R5
			I32WrapI64
			Get R2
			I64Const $8
			I64Shl
			I64Store $16

			I64Const $19
			Set R6
		Else
			// msgID's rest, one anchor, value count.
			Get R5
			I32WrapI64
			I64Load msgID+8(FP)
			I64Const $8
			I64ShrU
			I64Const $0x100000000000000
			I64Or
			I64Store $8

			Get R5
			I32WrapI64
			I64Load anchor+16(FP)
			I64Const $8
			I64Shl
			I64Store $16

			Get R5
			I32WrapI64
			I64Load anchor+16(FP)
			I64Const $56
			I64ShrU
			Get R2
			I64Const $8
			I64Shl
			I64Or
			I64Store $24

			I64Const $27
			Set R6
		End

		MOVD values_base+24(FP), R7
		Get R2
		Set R8

	done:
		Block
		next:
			Loop
				Get R8
				I64Eqz
				BrIf done

				Get R7
				I32WrapI64
				I64Load $0
				Set R9
				Get R7
				I32WrapI64
				I64Load $8
				Set R10

				// Text or string: the data word points at (bytes, length).
				Get R9
				Get R0
				I32WrapI64
				I64Load $runtime_types
				I64Eq
				Get R9
				Get R0
				I32WrapI64
				I64Load $(runtime_types+8)
				I64Eq
				I32Or
				If
					Get R10
					I32WrapI64
					I64Load $0
					Set R12
					Get R10
					I32WrapI64
					I64Load $8
					Set R11

					// l > room-n-5-8: not here.
					Get R4
					Get R6
					I64Sub
					I64Const $13
					I64Sub
					Get R11
					I64LtS
					BrIf slow

					// Tag and length, then the bytes at q = p+n+5.
					STORE_TAG_LEN($const_asmKindString)

					Get R13
					I64Const $5
					I64Add
					Set R13

					// 8 to 16 bytes: two overlapping 8-byte loads and stores;
					// 4 to 7: two 4-byte ones; 1 to 3: three bytes; more than
					// 16: memory.copy.
					Get R11
					I64Const $8
					I64GeS
					If
						Get R11
						I64Const $16
						I64LeS
						If
							Get R12
							I32WrapI64
							I64Load $0
							Set R14
							Get R12
							Get R11
							I64Add
							I64Const $8
							I64Sub
							I32WrapI64
							I64Load $0
							Set R15
							Get R13
							I32WrapI64
							Get R14
							I64Store $0
							Get R13
							Get R11
							I64Add
							I64Const $8
							I64Sub
							I32WrapI64
							Get R15
							I64Store $0
						Else
							Get R13
							I32WrapI64
							Get R12
							I32WrapI64
							Get R11
							I32WrapI64
							MemoryCopy
						End
					Else
						Get R11
						I64Const $4
						I64GeS
						If
							Get R12
							I32WrapI64
							I64Load32U $0
							Set R14
							Get R12
							Get R11
							I64Add
							I64Const $4
							I64Sub
							I32WrapI64
							I64Load32U $0
							Set R15
							Get R13
							I32WrapI64
							Get R14
							I64Store32 $0
							Get R13
							Get R11
							I64Add
							I64Const $4
							I64Sub
							I32WrapI64
							Get R15
							I64Store32 $0
						Else
							Get R11
							I64Eqz
							I32Eqz
							If
								// b[0], b[l/2], b[l-1] (l is 1, 2 or 3).
								Get R13
								I32WrapI64
								Get R12
								I32WrapI64
								I32Load8U $0
								I32Store8 $0

								Get R13
								Get R11
								I64Const $1
								I64ShrU
								Tee R14
								I64Add
								I32WrapI64
								Get R12
								Get R14
								I64Add
								I32WrapI64
								I32Load8U $0
								I32Store8 $0

								Get R13
								Get R11
								I64Add
								I64Const $1
								I64Sub
								I32WrapI64
								Get R12
								Get R11
								I64Add
								I64Const $1
								I64Sub
								I32WrapI64
								I32Load8U $0
								I32Store8 $0
							End
						End
					End

					Get R6
					Get R11
					I64Add
					I64Const $5
					I64Add
					Set R6
				Else
					// int64 or int: the data word points at the value.
					Get R9
					Get R0
					I32WrapI64
					I64Load $(runtime_types+16)
					I64Eq
					Get R9
					Get R0
					I32WrapI64
					I64Load $(runtime_types+24)
					I64Eq
					I32Or
					I32Eqz
					BrIf slow

					// room-n < 9+8: not here.
					Get R4
					Get R6
					I64Sub
					I64Const $17
					I64LtS
					BrIf slow

					Get R10
					I32WrapI64
					I64Load $0
					Set R11

					STORE_TAG_LEN($const_asmKindInt)

					Get R13
					I32WrapI64
					Get R11
					I64Const $56
					I64ShrU
					I64Store $8

					Get R6
					I64Const $9
					I64Add
					Set R6
				End

				Get R7
				I64Const $16
				I64Add
				Set R7
				Get R8
				I64Const $1
				I64Sub
				Set R8
				Br next
			End
		End

		// The op is complete: r.out grows over it; one more emitted.
		Get R0
		I32WrapI64
		Get R3
		Get R6
		I64Add
		I64Store $(runtime_out+8)

		Get R0
		I32WrapI64
		Get R0
		I32WrapI64
		I64Load $(runtime_sc+SpoutCollector_emitted)
		I64Const $1
		I64Add
		I64Store $(runtime_sc+SpoutCollector_emitted)
		RET
	End

	// Anything else, with r.out as it was.
	MOVD r+0(FP), 0(SP)
	MOVD msgID+8(FP), 8(SP)
	MOVD anchor+16(FP), 16(SP)
	MOVD values_base+24(FP), 24(SP)
	MOVD values_len+32(FP), 32(SP)
	MOVD values_cap+40(FP), 40(SP)
	CALL ·emitDefaultSlow(SB)
	RET
