package gomem

import (
	"encoding/binary"

	"golang.org/x/arch/x86/x86asm"
)

// dataRefs returns the addresses of globals that the machine code at
// addr refers to, in the order the code does.
//
// This is how a stripped binary's runtime.allglen and runtime.allgptr are
// found: runtime.forEachGRace begins with atomicAllG, inlined, which loads
// allglen and then allgptr; runtime.allgadd stores allgs, allgptr and
// allglen. Reading what those two functions address, then checking the
// candidates against each other in the live process (allgs's pointer and
// length equal allgptr and allglen), names the variables exactly, whatever
// the Go version lays out around them. A scan of the data sections for
// something shaped like a slice of g pointers was the alternative; it can
// be fooled by copies of the list (the GC's own snapshot of allgs is one)
// and costs a read of all of .bss.
func dataRefs(arch string, code []byte, addr uint64) []uint64 {
	switch arch {
	case "amd64":
		return refsAMD64(code, addr)
	case "arm64":
		return refsARM64(code, addr)
	}
	return nil
}

// refsAMD64 collects RIP-relative memory operands.
func refsAMD64(code []byte, addr uint64) []uint64 {
	var refs []uint64
	eachAMD64(code, addr, func(inst x86asm.Inst, next uint64) {
		for _, a := range inst.Args {
			if m, ok := a.(x86asm.Mem); ok && m.Base == x86asm.RIP && m.Index == 0 {
				refs = append(refs, uint64(int64(next)+m.Disp))
			}
		}
	})
	return refs
}

// eachAMD64 decodes code at addr instruction by instruction, with the
// address of the next; a byte that does not decode is skipped.
func eachAMD64(code []byte, addr uint64, f func(inst x86asm.Inst, next uint64)) {
	for i := 0; i < len(code); {
		inst, err := x86asm.Decode(code[i:], 64)
		if err != nil || inst.Len == 0 {
			i++
			continue
		}
		f(inst, addr+uint64(i)+uint64(inst.Len))
		i += inst.Len
	}
}

// refsARM64 follows the three instruction forms the Go compiler uses to
// address a global on arm64: ADRP (the 4 KiB page), then ADD (immediate)
// or a load or store with an unsigned immediate offset from that register.
// They are decoded from their bits: arm64asm keeps the immediates of ADD
// and LDR behind unexported fields, and these encodings are fixed.
func refsARM64(code []byte, addr uint64) []uint64 {
	var refs []uint64
	var page [32]uint64
	var known [32]bool
	for i := 0; i+4 <= len(code); i += 4 {
		w := binary.LittleEndian.Uint32(code[i:])
		pc := addr + uint64(i)
		switch {
		case w&0x9f000000 == 0x90000000: // ADRP Xd, label
			rd := w & 31
			imm := int64((w>>29)&3 | ((w>>5)&0x7ffff)<<2)
			imm = imm << 43 >> 43 // sign-extend 21 bits
			page[rd], known[rd] = (pc&^0xfff)+uint64(imm<<12), true
		case w>>23 == 0x122: // ADD Xd, Xn, #imm{, LSL #12}
			rd, rn := w&31, (w>>5)&31
			imm := uint64((w >> 10) & 0xfff)
			if (w>>22)&1 == 1 {
				imm <<= 12
			}
			if known[rn] {
				v := page[rn] + imm
				refs = append(refs, v)
				page[rd], known[rd] = v, true
			} else {
				known[rd] = false
			}
		case (w>>24)&0x3f == 0x39: // LDR/STR (immediate, unsigned offset)
			rn, rt := (w>>5)&31, w&31
			size := w >> 30
			off := uint64((w>>10)&0xfff) << size
			if known[rn] {
				refs = append(refs, page[rn]+off)
			}
			if (w>>22)&3 != 0 { // a load writes rt
				known[rt] = false
			}
		}
	}
	return refs
}
