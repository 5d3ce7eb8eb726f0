/*
 * libFuzzer harness for the pure walker, sc_stack_walk().
 *
 * The contract under test: whatever the bytes of the stack, the walker never
 * reads outside the bounds it is given, never writes past struct sc_stack,
 * records only return addresses that lie in text, and follows the walk
 * rules exactly.  The stack image is copied into a malloc'ed buffer of
 * exactly its size, so that ASan reports any read outside it (the fuzz build
 * defines SC_FUZZING, which keeps the walker's frame loads instrumented),
 * and the result is compared with a reference walker written here from the
 * rules, independently of the library's helpers.
 *
 * Input layout (little-endian), HDR_SIZE bytes of header, then the image:
 *
 *   0      u8   flags: F_RELOC, F_RAWFP, low-address misalignment (3 bits)
 *   1      u8   number of text ranges, modulo MAX_TEXT + 1
 *   2      u16  reserved
 *   4      u32  fp: an offset from lo as a signed 32-bit value, or with
 *               F_RAWFP the raw value of fp
 *   8      4 x {u32 lo, u32 len}: text ranges [TEXT_BASE + lo,
 *               TEXT_BASE + lo + len); empty ones are dropped, the rest
 *               sorted and merged, as the library's contract requires
 *   40     the stack image
 *
 * With F_RELOC, each 8-byte word of the image whose value is in
 * [1, RELOC_LIMIT) is an offset from lo - RELOC_BIAS and is rewritten to
 * that address before the walk, so that inputs can hold frame chains that
 * survive the buffer moving between runs.  Other words are used as they
 * are; a return address is a raw word near TEXT_BASE.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stackcap.h"

#define HDR_SIZE	40
#define MAX_TEXT	4
#define TEXT_BASE	((uintptr_t)0x400000)
#define RELOC_LIMIT	((uint64_t)0x10000)
#define RELOC_BIAS	((uintptr_t)0x100)

#define F_RELOC		0x01
#define F_RAWFP		0x02
#define F_MISALIGN(f)	(((f) >> 2) & 7)

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t
get32(const uint8_t *p)
{
	return ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24);
}

static int
range_cmp(const void *a, const void *b)
{
	const struct sc_range *ra = a, *rb = b;

	return (ra->lo < rb->lo ? -1 : ra->lo > rb->lo);
}

/* Sort by lo and merge overlapping or adjacent ranges; returns the count. */
static size_t
text_normalise(struct sc_range *r, size_t n)
{
	size_t i, out;

	if (n == 0)
		return (0);
	qsort(r, n, sizeof(*r), range_cmp);
	for (out = 0, i = 1; i < n; i++) {
		if (r[i].lo <= r[out].hi) {
			if (r[i].hi > r[out].hi)
				r[out].hi = r[i].hi;
		} else
			r[++out] = r[i];
	}
	return (out + 1);
}

/* A linear scan: deliberately not the library's binary search. */
static int
ref_in_text(uintptr_t pc, const struct sc_range *text, size_t ntext)
{
	size_t i;

	for (i = 0; i < ntext; i++)
		if (pc >= text[i].lo && pc < text[i].hi)
			return (1);
	return (0);
}

/*
 * The walk rules (docs/protocol.md, "The walk"), on a private copy of the
 * image (img holds the bytes of [lo, hi)), with offsets instead of
 * pointers.
 */
static int
ref_walk(uintptr_t *pcs, uintptr_t fp, uintptr_t lo, uintptr_t hi,
    const uint8_t *img, const struct sc_range *text, size_t ntext)
{
	uint64_t next, ret;
	int depth;

	depth = 0;
	for (;;) {
		if (fp < lo || fp >= hi || hi - fp < 16)
			break;
		if (fp % 8 != 0)
			break;
		memcpy(&next, img + (fp - lo), 8);
		memcpy(&ret, img + (fp - lo) + 8, 8);
		if (!ref_in_text((uintptr_t)ret, text, ntext))
			break;
		if (depth == SC_STACK_MAX)
			break;
		pcs[depth++] = (uintptr_t)ret;
		if ((uintptr_t)next <= fp)
			break;
		fp = (uintptr_t)next;
	}
	return (depth);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sc_range text[MAX_TEXT], stack;
	uintptr_t fp, refpcs[SC_STACK_MAX];
	struct sc_stack *st;
	size_t i, len, mis, ntext;
	uint8_t *buf, *img;
	uint64_t w;
	int depth, refdepth;
	uint8_t flags;

	if (size < HDR_SIZE)
		return (0);
	flags = data[0];
	mis = F_MISALIGN(flags);
	len = size - HDR_SIZE;

	/* Text ranges: drop empty ones, then sort and merge. */
	for (ntext = 0, i = 0; i < (size_t)data[1] % (MAX_TEXT + 1); i++) {
		text[ntext].lo = TEXT_BASE + get32(data + 8 + 8 * i);
		text[ntext].hi = text[ntext].lo + get32(data + 12 + 8 * i);
		if (text[ntext].hi > text[ntext].lo)
			ntext++;
	}
	ntext = text_normalise(text, ntext);

	/*
	 * The buffer is exactly mis + len bytes and the stack is its last len
	 * bytes: a read past the top is a heap overflow that ASan reports.
	 * (Below lo, only the mis bytes of misalignment are not redzone.)
	 */
	buf = malloc(mis + len + (mis + len == 0));
	img = malloc(len + (len == 0));
	/* The sc_stack alone on the heap: a write past it is caught too. */
	st = malloc(sizeof(*st));
	if (buf == NULL || img == NULL || st == NULL)
		abort();
	memset(buf, 0xa5, mis);
	stack.lo = (uintptr_t)buf + mis;
	stack.hi = stack.lo + len;
	memcpy(img, data + HDR_SIZE, len);
	if (flags & F_RELOC) {
		/* The words at 8-byte aligned addresses, as the walker
		 * reads. */
		for (i = (8 - mis) & 7; i + 8 <= len; i += 8) {
			memcpy(&w, img + i, 8);
			if (w != 0 && w < RELOC_LIMIT) {
				w = (uint64_t)(stack.lo - RELOC_BIAS + w);
				memcpy(img + i, &w, 8);
			}
		}
	}
	memcpy(buf + mis, img, len);
	if (flags & F_RAWFP)
		fp = (uintptr_t)get32(data + 4);
	else
		fp = stack.lo + (uintptr_t)(intptr_t)(int32_t)get32(data + 4);

	st->depth = -12345;		/* the walker must empty it first */
	depth = sc_stack_walk(st, fp, stack, text, ntext);

	/* The invariants. */
	if (depth != st->depth)
		abort();
	if (depth < 0 || depth > SC_STACK_MAX)
		abort();
	for (i = 0; i < (size_t)depth; i++)
		if (!ref_in_text(st->pcs[i], text, ntext))
			abort();
	/* The image is untouched. */
	if (memcmp(buf + mis, img, len) != 0)
		abort();
	/* Exactly the frames the rules give, in order. */
	refdepth = ref_walk(refpcs, fp, stack.lo, stack.hi, img, text, ntext);
	if (depth != refdepth)
		abort();
	for (i = 0; i < (size_t)depth; i++)
		if (st->pcs[i] != refpcs[i])
			abort();

	free(st);
	free(img);
	free(buf);
	return (0);
}
