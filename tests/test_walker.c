/*
 * The pure frame-pointer walker (stack_capture()) and its frame checks
 * (kstack_contains(), INKERNEL()), on synthetic stacks.
 *
 * Every synthetic stack is an mmap'ed region with a PROT_NONE guard page
 * below and above it, and the walker is given exactly that region as its
 * bounds: a single read outside the bounds faults and fails the test.  The
 * "text" is made of fake ranges that are never dereferenced.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stackcap/cmocka.h"
#include "stackcap.h"
#include "stackcap/testing.h"

/* Fake text: three ranges with gaps, sorted, not overlapping. */
#define T0_LO	((uintptr_t)0x400000)
#define T0_HI	((uintptr_t)0x500000)
#define T1_LO	((uintptr_t)0x600000)
#define T1_HI	((uintptr_t)0x600100)
#define T2_LO	((uintptr_t)0x7f0000000000)
#define T2_HI	((uintptr_t)0x7f0000001000)

static const struct sc_range text1[] = { { T0_LO, T0_HI } };
static const struct sc_range text3[] = {
	{ T0_LO, T0_HI }, { T1_LO, T1_HI }, { T2_LO, T2_HI },
};

#define PC(n)	(T0_LO + 0x100 + (uintptr_t)(n) * 0x10)	/* in text1 */
#define NOTEXT	((uintptr_t)0x300000)			/* in no text */

/* The synthetic stack: [lo, hi) between two guard pages. */
#define SSTACK_PAGES	2

struct sstack {
	void		*map;
	size_t		 maplen;
	struct sc_range	 r;
};

static struct sstack ss;

static int
sstack_setup(void **state)
{
	size_t pg;
	char *p;

	pg = (size_t)sysconf(_SC_PAGESIZE);
	ss.maplen = (SSTACK_PAGES + 2) * pg;
	p = mmap(NULL, ss.maplen, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return (-1);
	if (mprotect(p, pg, PROT_NONE) != 0 ||
	    mprotect(p + (SSTACK_PAGES + 1) * pg, pg, PROT_NONE) != 0) {
		munmap(p, ss.maplen);
		return (-1);
	}
	ss.map = p;
	ss.r.lo = (uintptr_t)(p + pg);
	ss.r.hi = (uintptr_t)(p + (SSTACK_PAGES + 1) * pg);
	return (0);
}

static int
sstack_teardown(void **state)
{
	munmap(ss.map, ss.maplen);
	return (0);
}

/* Fresh contents for each test: a pattern that is no text and no frame. */
static int
sstack_clear(void **state)
{
	memset((void *)ss.r.lo, 0xa5, ss.r.hi - ss.r.lo);
	return (0);
}

/* Write the frame record {next, ret} at fp (which must be inside). */
static void
rec(uintptr_t fp, uintptr_t next, uintptr_t ret)
{
	uintptr_t *p = (uintptr_t *)fp;

	assert_true(fp >= ss.r.lo && fp + 16 <= ss.r.hi && (fp & 7) == 0);
	p[0] = next;
	p[1] = ret;
}

static int
walk(struct sc_stack *st, uintptr_t fp)
{
	return (sc_stack_walk(st, fp, ss.r, text1, 1));
}

/* ------------------------------------------------------------------ */

static void
test_valid_chain(void **state)
{
	struct sc_stack st;
	uintptr_t a = ss.r.lo + 0x40, b = ss.r.lo + 0x100, c = ss.r.lo + 0x400;

	rec(a, b, PC(1));
	rec(b, c, PC(2));
	rec(c, 0, PC(3));		/* next 0 < c: stops after c */
	assert_int_equal(walk(&st, a), 3);
	assert_int_equal(st.depth, 3);
	assert_int_equal(st.pcs[0], PC(1));
	assert_int_equal(st.pcs[1], PC(2));
	assert_int_equal(st.pcs[2], PC(3));
}

static void
test_walk_empties_first(void **state)
{
	struct sc_stack st;

	sc_stack_zero(&st);
	sc_stack_put(&st, 1);
	sc_stack_put(&st, 2);
	assert_int_equal(walk(&st, 0), 0);
	assert_int_equal(st.depth, 0);
}

static void
test_fp_below_range(void **state)
{
	struct sc_stack st;

	/* Both would read the lower guard page. */
	assert_int_equal(walk(&st, ss.r.lo - 16), 0);
	assert_int_equal(walk(&st, ss.r.lo - 8), 0);	/* straddles lo */
	assert_int_equal(walk(&st, ss.r.lo - 4096), 0);
	/*
	 * A next fp below lo is also smaller than the current fp: the
	 * record is kept and the walk ends without reading below lo.
	 */
	rec(ss.r.lo, ss.r.lo + 0x20, PC(0));
	rec(ss.r.lo + 0x20, ss.r.lo - 16, PC(1));
	assert_int_equal(walk(&st, ss.r.lo), 2);
}

static void
test_fp_straddles_top(void **state)
{
	struct sc_stack st;

	assert_int_equal(walk(&st, ss.r.hi - 8), 0);
	/* A record that points to a straddling one: recorded, then stop. */
	rec(ss.r.hi - 0x100, ss.r.hi - 8, PC(5));
	assert_int_equal(walk(&st, ss.r.hi - 0x100), 1);
	assert_int_equal(st.pcs[0], PC(5));
}

static void
test_fp_above_range(void **state)
{
	struct sc_stack st;

	assert_int_equal(walk(&st, ss.r.hi), 0);
	assert_int_equal(walk(&st, ss.r.hi + 16), 0);
	assert_int_equal(walk(&st, UINTPTR_MAX - 15), 0);
	assert_int_equal(walk(&st, UINTPTR_MAX & ~(uintptr_t)7), 0);
}

static void
test_fp_last_record(void **state)
{
	struct sc_stack st;

	/* [hi - 16, hi) is the last record that fits: allowed. */
	rec(ss.r.hi - 16, 0, PC(7));
	assert_int_equal(walk(&st, ss.r.hi - 16), 1);
	assert_int_equal(st.pcs[0], PC(7));
	/* The first one too. */
	rec(ss.r.lo, ss.r.hi - 16, PC(6));
	assert_int_equal(walk(&st, ss.r.lo), 2);
	assert_int_equal(st.pcs[0], PC(6));
	assert_int_equal(st.pcs[1], PC(7));
}

static void
test_fp_misaligned(void **state)
{
	struct sc_stack st;
	uintptr_t fp = ss.r.lo + 0x104;
	uintptr_t w[2] = { 0, PC(1) };
	int i;

	/*
	 * A record that would be valid if misaligned loads were allowed:
	 * the alignment rule alone stops the walk.
	 */
	memcpy((void *)fp, w, sizeof(w));
	assert_int_equal(walk(&st, fp), 0);
	for (i = 1; i < 8; i++)
		assert_int_equal(walk(&st, ss.r.lo + 0x200 + i), 0);
	/* A misaligned next fp ends the walk after the record before it. */
	rec(ss.r.lo + 0x80, fp, PC(2));
	assert_int_equal(walk(&st, ss.r.lo + 0x80), 1);
	assert_int_equal(st.pcs[0], PC(2));
	/* hi - 12: both misaligned and straddling the top. */
	assert_int_equal(walk(&st, ss.r.hi - 12), 0);
}

static void
test_ret_outside_text(void **state)
{
	struct sc_stack st;
	uintptr_t a = ss.r.lo + 0x10, b = ss.r.lo + 0x30, c = ss.r.lo + 0x50;

	rec(a, b, PC(1));
	rec(b, c, NOTEXT);		/* depth stops before b */
	rec(c, 0, PC(3));
	assert_int_equal(walk(&st, a), 1);
	assert_int_equal(st.pcs[0], PC(1));
	/* The bounds of text: lo is in, hi is not, lo - 1 is not. */
	rec(b, c, T0_HI);
	assert_int_equal(walk(&st, a), 1);
	rec(b, c, T0_LO - 1);
	assert_int_equal(walk(&st, a), 1);
	rec(b, c, T0_HI - 1);
	assert_int_equal(walk(&st, a), 3);
	rec(b, c, T0_LO);
	assert_int_equal(walk(&st, a), 3);
	assert_int_equal(st.pcs[1], T0_LO);
	/* A return address of 0, and the first record outside text. */
	rec(a, b, 0);
	assert_int_equal(walk(&st, a), 0);
}

static void
test_next_not_greater(void **state)
{
	struct sc_stack st;
	uintptr_t a = ss.r.lo + 0x100, b = ss.r.lo + 0x180;

	/* An equal next fp: the record's return address is kept. */
	rec(a, a, PC(1));
	assert_int_equal(walk(&st, a), 1);
	assert_int_equal(st.pcs[0], PC(1));
	/* A smaller next fp: likewise. */
	rec(a, b, PC(1));
	rec(b, a - 0x10, PC(2));
	assert_int_equal(walk(&st, a), 2);
	assert_int_equal(st.pcs[1], PC(2));
	rec(b, 0, PC(2));
	assert_int_equal(walk(&st, a), 2);
}

static void
test_loop(void **state)
{
	struct sc_stack st;
	uintptr_t a = ss.r.lo + 0x100, b = ss.r.lo + 0x200;

	/* A -> B -> A: the strictly-greater rule ends it, with both kept. */
	rec(a, b, PC(1));
	rec(b, a, PC(2));
	assert_int_equal(walk(&st, a), 2);
	assert_int_equal(st.pcs[0], PC(1));
	assert_int_equal(st.pcs[1], PC(2));
	/* Starting at B: B -> A stops at once. */
	assert_int_equal(walk(&st, b), 1);
	assert_int_equal(st.pcs[0], PC(2));
}

struct guarded_stack {
	struct sc_stack	st;
	uint64_t	canary[8];
};

#define CANARY	UINT64_C(0xfeedfacecafebeef)

static void
test_chain_longer_than_max(void **state)
{
	struct guarded_stack g;
	uintptr_t fp;
	int i, n;

	/* 2 * SC_STACK_MAX records, 32 bytes apart, all valid. */
	n = 2 * SC_STACK_MAX;
	assert_true(ss.r.lo + (uintptr_t)n * 32 <= ss.r.hi);
	for (i = 0; i < n; i++) {
		fp = ss.r.lo + (uintptr_t)i * 32;
		rec(fp, fp + 32, PC(i));
	}
	for (i = 0; i < 8; i++)
		g.canary[i] = CANARY;
	assert_int_equal(sc_stack_walk(&g.st, ss.r.lo, ss.r, text1, 1),
	    SC_STACK_MAX);
	assert_int_equal(g.st.depth, SC_STACK_MAX);
	for (i = 0; i < SC_STACK_MAX; i++)
		assert_int_equal(g.st.pcs[i], PC(i));
	for (i = 0; i < 8; i++)
		assert_int_equal(g.canary[i], CANARY);

	/* Exactly SC_STACK_MAX records, the last one ending the chain. */
	rec(ss.r.lo + (SC_STACK_MAX - 1) * 32, 0, PC(SC_STACK_MAX - 1));
	assert_int_equal(sc_stack_walk(&g.st, ss.r.lo, ss.r, text1, 1),
	    SC_STACK_MAX);
	for (i = 0; i < 8; i++)
		assert_int_equal(g.canary[i], CANARY);
	/* One fewer. */
	rec(ss.r.lo + (SC_STACK_MAX - 2) * 32, 0, PC(SC_STACK_MAX - 2));
	assert_int_equal(sc_stack_walk(&g.st, ss.r.lo, ss.r, text1, 1),
	    SC_STACK_MAX - 1);
}

static void
test_fp_zero(void **state)
{
	struct sc_stack st;

	assert_int_equal(walk(&st, 0), 0);
	assert_int_equal(walk(&st, 8), 0);
	assert_int_equal(walk(&st, 16), 0);
}

static void
test_empty_and_reversed_range(void **state)
{
	struct sc_range empty = { ss.r.lo + 0x100, ss.r.lo + 0x100 };
	struct sc_range rev = { ss.r.hi - 0x100, ss.r.lo + 0x100 };
	struct sc_range small = { ss.r.lo + 0x100, ss.r.lo + 0x10f };
	struct sc_range exact = { ss.r.lo + 0x100, ss.r.lo + 0x110 };
	struct sc_stack st;

	rec(ss.r.lo + 0x100, 0, PC(1));
	rec(ss.r.lo + 0x200, 0, PC(2));
	assert_int_equal(sc_stack_walk(&st, ss.r.lo + 0x100, empty, text1, 1),
	    0);
	assert_int_equal(sc_stack_walk(&st, ss.r.lo + 0x100, rev, text1, 1),
	    0);
	assert_int_equal(sc_stack_walk(&st, ss.r.lo + 0x200, rev, text1, 1),
	    0);
	assert_int_equal(sc_stack_walk(&st, ss.r.lo + 0x100, small, text1, 1),
	    0);
	/* A range of exactly one record holds that record. */
	assert_int_equal(sc_stack_walk(&st, ss.r.lo + 0x100, exact, text1, 1),
	    1);
	assert_int_equal(st.pcs[0], PC(1));
}

static void
test_no_text(void **state)
{
	struct sc_stack st;

	rec(ss.r.lo + 0x100, 0, PC(1));
	assert_int_equal(sc_stack_walk(&st, ss.r.lo + 0x100, ss.r, NULL, 0),
	    0);
	assert_int_equal(sc_stack_walk(&st, ss.r.lo + 0x100, ss.r, text1, 0),
	    0);
}

static void
test_several_text_ranges(void **state)
{
	static const uintptr_t rets[] = {
		T0_LO, T0_HI - 1, T1_LO, T1_HI - 1, T2_LO, T2_HI - 1,
		T1_LO + 0x80, T0_LO + 0x1234,
	};
	struct sc_stack st;
	uintptr_t fp;
	size_t i, n = sizeof(rets) / sizeof(rets[0]);

	/* One frame in each range and at each boundary, in any order. */
	for (i = 0; i < n; i++) {
		fp = ss.r.lo + i * 16;
		rec(fp, i + 1 < n ? fp + 16 : 0, rets[i]);
	}
	assert_int_equal(sc_stack_walk(&st, ss.r.lo, ss.r, text3, 3), (int)n);
	for (i = 0; i < n; i++)
		assert_int_equal(st.pcs[i], rets[i]);
	/* A gap between ranges ends the walk. */
	rec(ss.r.lo + 3 * 16, ss.r.lo + 4 * 16, T1_HI);
	assert_int_equal(sc_stack_walk(&st, ss.r.lo, ss.r, text3, 3), 3);
	rec(ss.r.lo + 3 * 16, ss.r.lo + 4 * 16, T2_LO - 1);
	assert_int_equal(sc_stack_walk(&st, ss.r.lo, ss.r, text3, 3), 3);
}

static void
test_pc_in_text(void **state)
{
	static const struct sc_range top[] = {
		{ 0, 1 }, { 0x1000, 0x2000 },
		{ UINTPTR_MAX - 16, UINTPTR_MAX },
	};
	struct sc_range many[33];
	size_t i;

	/* Every range found; boundaries lo inclusive, hi exclusive. */
	for (i = 0; i < 3; i++) {
		assert_true(sc_pc_in_text(text3[i].lo, text3, 3));
		assert_true(sc_pc_in_text(text3[i].hi - 1, text3, 3));
		assert_true(sc_pc_in_text(text3[i].lo +
		    (text3[i].hi - text3[i].lo) / 2, text3, 3));
		assert_false(sc_pc_in_text(text3[i].hi, text3, 3));
		assert_false(sc_pc_in_text(text3[i].lo - 1, text3, 3));
	}
	assert_false(sc_pc_in_text(0, text3, 3));
	assert_false(sc_pc_in_text(UINTPTR_MAX, text3, 3));
	assert_false(sc_pc_in_text(T0_LO, text3, 0));
	assert_false(sc_pc_in_text(T0_LO, NULL, 0));

	/* Near 0 and near UINTPTR_MAX. */
	assert_true(sc_pc_in_text(0, top, 3));
	assert_false(sc_pc_in_text(1, top, 3));
	assert_true(sc_pc_in_text(UINTPTR_MAX - 16, top, 3));
	assert_true(sc_pc_in_text(UINTPTR_MAX - 1, top, 3));
	assert_false(sc_pc_in_text(UINTPTR_MAX, top, 3));
	assert_false(sc_pc_in_text(UINTPTR_MAX - 17, top, 3));

	/* An empty range holds nothing. */
	many[0].lo = many[0].hi = 0x5000;
	assert_false(sc_pc_in_text(0x5000, many, 1));

	/* A longer set (odd and even sizes): each range found, no gap. */
	for (i = 0; i < 33; i++) {
		many[i].lo = 0x10000 + i * 0x100;
		many[i].hi = many[i].lo + 0x80;
	}
	for (i = 0; i < 33; i++) {
		assert_true(sc_pc_in_text(many[i].lo, many, 33));
		assert_true(sc_pc_in_text(many[i].hi - 1, many, 33));
		assert_false(sc_pc_in_text(many[i].hi, many, 33));
		assert_false(sc_pc_in_text(many[i].lo - 1, many, 33));
		assert_true(sc_pc_in_text(many[i].lo, many, 32) == (i < 32));
	}
}

static void
test_frame_in_range(void **state)
{
	struct sc_range r = { 0x1000, 0x2000 };
	struct sc_range top = { UINTPTR_MAX - 32, UINTPTR_MAX };
	struct sc_range all = { 0, UINTPTR_MAX };
	struct sc_range z = { 0, 16 };

	assert_true(sc_frame_in_range(0x1000, r));
	assert_true(sc_frame_in_range(0x2000 - 16, r));
	assert_false(sc_frame_in_range(0x2000 - 15, r));
	assert_false(sc_frame_in_range(0x2000 - 8, r));
	assert_false(sc_frame_in_range(0x2000, r));
	assert_false(sc_frame_in_range(0xfff, r));
	assert_false(sc_frame_in_range(0xff8, r));
	assert_false(sc_frame_in_range(0, r));
	assert_false(sc_frame_in_range(UINTPTR_MAX, r));
	assert_false(sc_frame_in_range(UINTPTR_MAX - 7, r));

	/* fp + 16 would overflow: none of these may wrap into the range. */
	assert_true(sc_frame_in_range(UINTPTR_MAX - 32, top));
	assert_true(sc_frame_in_range(UINTPTR_MAX - 16, top));
	assert_false(sc_frame_in_range(UINTPTR_MAX - 15, top));
	assert_false(sc_frame_in_range(UINTPTR_MAX - 8, top));
	assert_false(sc_frame_in_range(UINTPTR_MAX, top));
	assert_false(sc_frame_in_range(0, top));
	assert_true(sc_frame_in_range(0, all));
	assert_true(sc_frame_in_range(UINTPTR_MAX - 16, all));
	assert_false(sc_frame_in_range(UINTPTR_MAX - 15, all));
	assert_true(sc_frame_in_range(0, z));
	assert_false(sc_frame_in_range(1, z));

	/* Empty, too small, reversed. */
	r.hi = r.lo;
	assert_false(sc_frame_in_range(r.lo, r));
	r.hi = r.lo + 15;
	assert_false(sc_frame_in_range(r.lo, r));
	r.hi = r.lo + 16;
	assert_true(sc_frame_in_range(r.lo, r));
	r.lo = 0x3000;
	r.hi = 0x1000;
	assert_false(sc_frame_in_range(0x1000, r));
	assert_false(sc_frame_in_range(0x2000, r));
	assert_false(sc_frame_in_range(0x3000, r));
	r.lo = UINTPTR_MAX;
	r.hi = 0;
	assert_false(sc_frame_in_range(0, r));
	assert_false(sc_frame_in_range(UINTPTR_MAX, r));
	assert_false(sc_frame_in_range(UINTPTR_MAX - 16, r));
}

/* ------------------------------------------------------------------ */
/* The process's text ranges. */

SC_NOIPA static void
a_function_of_the_test(void)
{
	__asm__ volatile("" ::: "memory");
}

static void
check_text_set(const struct sc_range *text, size_t ntext)
{
	size_t i;

	assert_non_null(text);
	assert_true(ntext > 0);
	for (i = 0; i < ntext; i++) {
		assert_true(text[i].lo < text[i].hi);
		if (i > 0)	/* sorted, not overlapping (merged) */
			assert_true(text[i - 1].hi < text[i].lo);
	}
	assert_true(sc_pc_in_text((uintptr_t)a_function_of_the_test, text,
	    ntext));
	assert_true(sc_pc_in_text((uintptr_t)sc_stack_walk, text, ntext));
	assert_true(sc_pc_in_text((uintptr_t)memcpy, text, ntext));
	/* Data is not text. */
	assert_false(sc_pc_in_text((uintptr_t)&ss, text, ntext));
	assert_false(sc_pc_in_text((uintptr_t)text1, text, ntext));
}

/*
 * The text set taken first, read again once the library's destructors
 * have run: "valid until the process exits" holds through exit() too,
 * where the process's other threads still run and may be walking.  A
 * destructor freed every set, and a thread that walked during exit()
 * read freed memory (TSan, test_thread; ASan here).  A destructor of
 * priority 101 runs after those of the default priority.
 */
static const struct sc_range *exit_text;
static struct sc_range exit_first;

__attribute__((destructor(101))) static void
text_after_exit(void)
{
	if (exit_text == NULL)
		return;
	if (exit_text[0].lo != exit_first.lo ||
	    exit_text[0].hi != exit_first.hi) {
		fprintf(stderr, "test_walker: the text set changed at exit\n");
		_exit(1);
	}
}

static void
test_text_ranges(void **state)
{
	const struct sc_range *text, *text2;
	size_t ntext, ntext2;

	sc_text_ranges(&text, &ntext);
	check_text_set(text, ntext);
	assert_true(ntext > 0);
	exit_text = text;
	exit_first = text[0];
	/* Stable between calls. */
	sc_text_ranges(&text2, &ntext2);
	assert_ptr_equal(text, text2);
	assert_int_equal(ntext, ntext2);

	assert_int_equal(sc_text_refresh(), 0);
	sc_text_ranges(&text2, &ntext2);
	check_text_set(text2, ntext2);
	/* The old snapshot stays valid (never freed): still readable. */
	check_text_set(text, ntext);
}

/*
 * A refresh that finds the same objects loaded publishes nothing: the set
 * stays the same one.  Each set published is kept for good, so before, a
 * thread that refreshed in a loop grew the process without end
 * (test_destroy_text_looper: 7.7 GB, then the OOM killer).
 */
static void
test_text_refresh_unchanged(void **state)
{
	const struct sc_range *text, *text2;
	size_t ntext, ntext2;
	int i;

	(void)state;
	sc_text_ranges(&text, &ntext);
	for (i = 0; i < 1000; i++)
		assert_int_equal(sc_text_refresh(), 0);
	sc_text_ranges(&text2, &ntext2);
	assert_ptr_equal(text, text2);
	assert_int_equal(ntext, ntext2);
}

/*
 * Libraries that are installed on every Debian/glibc system (zlib and
 * libcrypt are "required" packages) but that nothing in this test links.
 */
static const struct {
	const char	*lib;
	const char	*sym;
} dl_candidates[] = {
	{ "libz.so.1", "zlibVersion" },
	{ "libcrypt.so.1", "crypt" },
	{ "libbz2.so.1.0", "BZ2_bzlibVersion" },
	{ "liblzma.so.5", "lzma_version_string" },
};

static void
test_text_refresh_after_dlopen(void **state)
{
	const struct sc_range *text;
	size_t i, ntext;
	void *h, *sym;
	Dl_info info;

	sc_text_ranges(&text, &ntext);
	for (i = 0; i < sizeof(dl_candidates) / sizeof(dl_candidates[0]);
	    i++) {
		/* Only a library that is not loaded yet proves anything. */
		h = dlopen(dl_candidates[i].lib, RTLD_NOW | RTLD_NOLOAD);
		if (h != NULL) {
			dlclose(h);
			continue;
		}
		h = dlopen(dl_candidates[i].lib, RTLD_NOW | RTLD_LOCAL);
		if (h == NULL)
			continue;
		sym = dlsym(h, dl_candidates[i].sym);
		/* The symbol must be the library's own code. */
		if (sym == NULL || dladdr(sym, &info) == 0 ||
		    info.dli_fname == NULL ||
		    strstr(info.dli_fname, dl_candidates[i].lib) == NULL) {
			dlclose(h);
			continue;
		}
		print_message("dlopen(%s): %s at %p\n", dl_candidates[i].lib,
		    dl_candidates[i].sym, sym);
		assert_false(sc_pc_in_text((uintptr_t)sym, text, ntext));
		assert_int_equal(sc_text_refresh(), 0);
		sc_text_ranges(&text, &ntext);
		check_text_set(text, ntext);
		assert_true(sc_pc_in_text((uintptr_t)sym, text, ntext));
		/* Kept loaded: the text set may name it until exit. */
		return;
	}
	skip();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_valid_chain, sstack_clear),
		cmocka_unit_test_setup(test_walk_empties_first, sstack_clear),
		cmocka_unit_test_setup(test_fp_below_range, sstack_clear),
		cmocka_unit_test_setup(test_fp_straddles_top, sstack_clear),
		cmocka_unit_test_setup(test_fp_above_range, sstack_clear),
		cmocka_unit_test_setup(test_fp_last_record, sstack_clear),
		cmocka_unit_test_setup(test_fp_misaligned, sstack_clear),
		cmocka_unit_test_setup(test_ret_outside_text, sstack_clear),
		cmocka_unit_test_setup(test_next_not_greater, sstack_clear),
		cmocka_unit_test_setup(test_loop, sstack_clear),
		cmocka_unit_test_setup(test_chain_longer_than_max,
		    sstack_clear),
		cmocka_unit_test_setup(test_fp_zero, sstack_clear),
		cmocka_unit_test_setup(test_empty_and_reversed_range,
		    sstack_clear),
		cmocka_unit_test_setup(test_no_text, sstack_clear),
		cmocka_unit_test_setup(test_several_text_ranges,
		    sstack_clear),
		cmocka_unit_test(test_pc_in_text),
		cmocka_unit_test(test_frame_in_range),
		cmocka_unit_test(test_text_ranges),
		cmocka_unit_test(test_text_refresh_unchanged),
		cmocka_unit_test(test_text_refresh_after_dlopen),
	};

	return (cmocka_run_group_tests(tests, sstack_setup, sstack_teardown));
}
