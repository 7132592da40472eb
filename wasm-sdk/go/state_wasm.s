// addInt's fast path in WebAssembly: the hash, probe and add of addIntGo
// (state.go), which stays the reference and takes every other case.
// Registers are the function's i64 locals:
//
//	R0 s          R4 pre (first 8 bytes)   R8 index base   R12 slots base
//	R1 key bytes  R5 h                     R9 slot address R13 new value
//	R2 n          R6 mask                  R10, R11 scratch
//	R3 x (hash)   R7 cell                  R14 slot number
//
// Nothing is written before every check has passed, so that falling back
// to addIntGo never adds twice.

#include "go_asm.h"
#include "textflag.h"
#include "funcdata.h"

// LOAD_LAST8 pushes the 8 bytes that end at base+n (n >= 8).
#define LOAD_LAST8(base, n) Get base; Get n; I64Add; I64Const $8; I64Sub; I32WrapI64; I64Load $0

// func addInt(s *State, key string, delta int64) int64
TEXT ·addInt(SB), NOSPLIT, $40-40
	NO_LOCAL_POINTERS
	MOVD s+0(FP), R0
	MOVD key_base+8(FP), R1
	MOVD key_len+16(FP), R2

slow:
	Block
		// x := seed ^ n*0x9e3779b97f4a7c15
		Get R0
		I32WrapI64
		I64Load $State_seed
		Get R2
		I64Const $0x9e3779b97f4a7c15
		I64Mul
		I64Xor
		Set R3
		I64Const $0
		Set R4

		Get R2
		I64Const $8
		I64GtS
		If
			// pre = the first 8 bytes; x mixes every 8 bytes while more
			// than 8 are left, then the last 8.
			Get R1
			I32WrapI64
			I64Load $0
			Set R4
			Get R1
			Set R10
			Get R2
			Set R11
		mix:
			Loop
				Get R3
				Get R10
				I32WrapI64
				I64Load $0
				I64Xor
				I64Const $0x9e3779b97f4a7c15
				I64Mul
				I64Const $29
				I64Rotl
				Set R3
				Get R10
				I64Const $8
				I64Add
				Set R10
				Get R11
				I64Const $8
				I64Sub
				Tee R11
				I64Const $8
				I64GtS
				BrIf mix
			End
			Get R3
			LOAD_LAST8(R1, R2)
			I64Xor
			Set R3
		Else
			Get R2
			I64Const $4
			I64GeS
			If
				// pre = le32(k) | le32(k[n-4:]) << (8*(n-4))
				Get R1
				I32WrapI64
				I64Load32U $0
				Get R1
				Get R2
				I64Add
				I64Const $4
				I64Sub
				I32WrapI64
				I64Load32U $0
				Get R2
				I64Const $4
				I64Sub
				I64Const $3
				I64Shl
				I64Shl
				I64Or
				Set R4
			Else
				Get R2
				I64Eqz
				I32Eqz
				If
					// pre = k[0] | k[n/2] << (8*(n/2)) | k[n-1] << (8*(n-1))
					Get R1
					I32WrapI64
					I64Load8U $0
					Get R1
					Get R2
					I64Const $1
					I64ShrU
					Tee R10
					I64Add
					I32WrapI64
					I64Load8U $0
					Get R10
					I64Const $3
					I64Shl
					I64Shl
					I64Or
					Get R1
					Get R2
					I64Add
					I64Const $1
					I64Sub
					I32WrapI64
					I64Load8U $0
					Get R2
					I64Const $1
					I64Sub
					I64Const $3
					I64Shl
					I64Shl
					I64Or
					Set R4
				End
			End
			Get R3
			Get R4
			I64Xor
			Set R3
		End

		// x ^= x >> 33; x *= 0xff51afd7ed558ccd; x ^= x >> 33; h = uint32(x)
		Get R3
		Get R3
		I64Const $33
		I64ShrU
		I64Xor
		I64Const $0xff51afd7ed558ccd
		I64Mul
		Tee R3
		Get R3
		I64Const $33
		I64ShrU
		I64Xor
		I64Const $0xffffffff
		I64And
		Set R5

		// No index yet: addIntGo.
		Get R0
		I32WrapI64
		I64Load $(State_index+8)
		Tee R6
		I64Eqz
		BrIf slow
		Get R6
		I64Const $1
		I64Sub
		Set R6
		Get R0
		I32WrapI64
		I64Load $State_index
		Set R8
		Get R0
		I32WrapI64
		I64Load $State_slots
		Set R12
		Get R5
		Get R6
		I64And
		Set R7

	found:
		Block
		probe:
			Loop
				// j := index[c]; 0 is an empty cell: not cached.
				Get R8
				Get R7
				I64Const $2
				I64Shl
				I64Add
				I32WrapI64
				I64Load32U $0
				Tee R10
				I64Eqz
				BrIf slow

				// e := &slots[j-1]
				Get R10
				I64Const $1
				I64Sub
				Tee R14
				I64Const $slot__size
				I64Mul
				Get R12
				I64Add
				Set R9

				Get R9
				I32WrapI64
				I64Load32U $slot_hash
				Get R5
				I64Eq
				Get R9
				I32WrapI64
				I64Load $slot_pre
				Get R4
				I64Eq
				I32And
				Get R9
				I32WrapI64
				I64Load32U $slot_klen
				Get R2
				I64Eq
				I32And
				If
					Get R2
					I64Const $8
					I64LeS
					BrIf found

					// The rest of the key against keys[koff+8 : koff+n], 8
					// bytes at a time, the last 8 overlapping.
					Get R0
					I32WrapI64
					I64Load $State_keys
					Get R9
					I32WrapI64
					I64Load32U $slot_koff
					I64Add
					Set R11
					I64Const $8
					Set R10
				cmp:
					Block
						Loop
							Get R10
							I64Const $8
							I64Add
							Get R2
							I64GtS
							BrIf cmp
							Get R11
							Get R10
							I64Add
							I32WrapI64
							I64Load $0
							Get R1
							Get R10
							I64Add
							I32WrapI64
							I64Load $0
							I64Ne
							BrIf cmp
							Get R10
							I64Const $8
							I64Add
							Set R10
							Br $0
						End
					End
					Get R10
					I64Const $8
					I64Add
					Get R2
					I64GtS
					If
						LOAD_LAST8(R11, R2)
						LOAD_LAST8(R1, R2)
						I64Eq
						BrIf found
					End
				End

				// c = (c + 1) & mask
				Get R7
				I64Const $1
				I64Add
				Get R6
				I64And
				Set R7
				Br probe
			End
		End

		// Found at R9: it must hold 8 bytes, and a first change must fit
		// in the dirty list without growing it.
		Get R9
		I32WrapI64
		I32Load $slot_vlen
		I32Const $8
		I32Ne
		BrIf slow
		Get R9
		I32WrapI64
		I32Load8U $slot_dirty
		I32Eqz
		If
			Get R0
			I32WrapI64
			I64Load $(State_dirty+8)
			Get R0
			I32WrapI64
			I64Load $(State_dirty+16)
			I64GeS
			BrIf slow
		End

		// v := value + delta
		Get R9
		I32WrapI64
		I64Load $slot_inl
		I64Load delta+24(FP)
		I64Add
		Set R13
		Get R9
		I32WrapI64
		Get R13
		I64Store $slot_inl

		Get R9
		I32WrapI64
		I32Load8U $slot_dirty
		I32Eqz
		If
			Get R9
			I32WrapI64
			I32Const $1
			I32Store8 $slot_dirty
			// dirty = append(dirty, j-1)
			Get R0
			I32WrapI64
			I64Load $State_dirty
			Get R0
			I32WrapI64
			I64Load $(State_dirty+8)
			Tee R10
			I64Const $2
			I64Shl
			I64Add
			I32WrapI64
			Get R14
			I64Store32 $0
			Get R0
			I32WrapI64
			Get R10
			I64Const $1
			I64Add
			I64Store $(State_dirty+8)
		End

		Get SP
		Get R13
		I64Store ret+32(FP)
		RET
	End

	MOVD s+0(FP), 0(SP)
	MOVD key_base+8(FP), 8(SP)
	MOVD key_len+16(FP), 16(SP)
	MOVD delta+24(FP), 24(SP)
	CALL ·addIntSlow(SB)
	MOVD 32(SP), R13
	Get SP
	Get R13
	I64Store ret+32(FP)
	RET
