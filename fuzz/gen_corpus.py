#!/usr/bin/env python3
"""Write the handwritten seeds of fuzz/corpus/walk/ (see fuzz_walk.c).

Each seed is a 40-byte header and a stack image.  Frame pointers in the
image use F_RELOC: a word in [1, 0x10000) means lo - 0x100 + word, so
`at(off)` below is the word for the address lo + off.  Return addresses are
raw words near TEXT_BASE.  Run from anywhere: python3 fuzz/gen_corpus.py
"""
import os
import struct

TEXT_BASE = 0x400000
RELOC_BIAS = 0x100
F_RELOC, F_RAWFP = 0x01, 0x02
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "walk")


def at(off):
    """The image word that relocates to lo + off."""
    return off + RELOC_BIAS


def header(fp, texts, flags=F_RELOC, misalign=0):
    h = struct.pack("<BBHI", flags | (misalign << 2), len(texts), 0,
                    fp & 0xffffffff)
    for lo, length in texts + [(0, 0)] * (4 - len(texts)):
        h += struct.pack("<II", lo, length)
    assert len(h) == 40
    return h


def image(size, recs):
    """recs: {offset: (next word, return address)}."""
    img = bytearray(b"\xa5" * size)
    for off, (nxt, ret) in recs.items():
        struct.pack_into("<QQ", img, off, nxt, ret)
    return bytes(img)


ONE_TEXT = [(0, 0x100000)]


def pc(n):
    return TEXT_BASE + 0x100 + 0x10 * n


SEEDS = {}

# A valid chain of three frames ending with next fp 0.
SEEDS["chain"] = header(0x40, ONE_TEXT) + image(0x400, {
    0x40: (at(0x100), pc(1)), 0x100: (at(0x200), pc(2)), 0x200: (0, pc(3))})
# A -> B -> A: ended by the strictly-greater rule.
SEEDS["loop"] = header(0x40, ONE_TEXT) + image(0x100, {
    0x40: (at(0x80), pc(1)), 0x80: (at(0x40), pc(2))})
# Equal next fp.
SEEDS["self"] = header(0x20, ONE_TEXT) + image(0x40, {
    0x20: (at(0x20), pc(1))})
# Longer than SC_STACK_MAX (64): 100 records 16 bytes apart.
SEEDS["long"] = header(0, ONE_TEXT) + image(100 * 16, {
    16 * i: (at(16 * (i + 1)), pc(i)) for i in range(100)})
# A misaligned fp, then a chain whose next fp is misaligned.
SEEDS["misaligned_fp"] = header(0x44, ONE_TEXT) + image(0x100, {
    0x40: (0, pc(1))})
SEEDS["misaligned_next"] = header(0x40, ONE_TEXT) + image(0x100, {
    0x40: (at(0x84), pc(1)), 0x80: (0, pc(2))})
# The last record that fits, then one that straddles the top.
SEEDS["last_record"] = header(0x40, ONE_TEXT) + image(0x100, {
    0x40: (at(0xf0), pc(1)), 0xf0: (0, pc(2))})
SEEDS["straddle_top"] = header(0x40, ONE_TEXT) + image(0x100, {
    0x40: (at(0xf8), pc(1)), 0xe8: (0, pc(2))})
# fp below the stack, straddling its bottom.
SEEDS["below"] = header(-8, ONE_TEXT) + image(0x40, {0: (0, pc(1))})
# A return address outside text in the middle of a chain.
SEEDS["ret_outside"] = header(0, ONE_TEXT) + image(0x80, {
    0: (at(0x20), pc(1)), 0x20: (at(0x40), TEXT_BASE + 0x100000),
    0x40: (0, pc(3))})
# Four text ranges, unsorted and overlapping (the harness merges them),
# and a return address at each boundary that counts.
SEEDS["texts"] = header(0, [(0x9000, 0x1000), (0x1000, 0x100),
                            (0x1080, 0x100), (0x20000, 0x10)]) + image(0x80, {
    0: (at(0x10), TEXT_BASE + 0x1000), 0x10: (at(0x20), TEXT_BASE + 0x117f),
    0x20: (at(0x30), TEXT_BASE + 0x9fff), 0x30: (at(0x40), TEXT_BASE + 0x20000),
    0x40: (at(0x50), TEXT_BASE + 0x2000f), 0x50: (0, TEXT_BASE + 0x20010)})
# A raw fp of 0, and an empty image.
SEEDS["fp_zero"] = header(0, ONE_TEXT, flags=F_RAWFP) + image(0x20, {
    0: (0, pc(1))})
SEEDS["empty"] = header(0, ONE_TEXT)
# The stack starts 3 bytes past an 8-byte boundary.
SEEDS["misaligned_lo"] = header(5, ONE_TEXT, misalign=3) + image(0x80, {
    5: (at(0x25), pc(1)), 0x25: (0, pc(2))})
# No text at all.
SEEDS["no_text"] = header(0, []) + image(0x20, {0: (0, pc(1))})


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, "seed-" + name), "wb") as f:
            f.write(data)
    print("%d seeds in %s" % (len(SEEDS), OUT))


if __name__ == "__main__":
    main()
