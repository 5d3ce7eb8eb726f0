/*
 * The frame-pointer walker against libunwind on the same real stack.
 *
 * A recursion of a noipa function builds a deep stack (DEPTH frames plus
 * main's); from its bottom, each round times many walks with
 * sc_stack_walk() (the process's text ranges, the pthread's stack bounds)
 * and many unw_backtrace() calls, and divides by the frames each returned.
 * The figure that matters is the ratio, measured in the same run: absolute
 * times depend on the machine.  The best round of each is kept (the least
 * disturbed by other load), and the median is printed beside it.
 *
 * usage: bench_walk [iterations]   (default 200000 walks per round)
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_util.h"
#include "stackcap.h"


#define DEPTH	50
#define ROUNDS	9
#define UNW_MAX	256

static long	iters = 200000;
static volatile uintptr_t sink;		/* keeps results alive */

struct result {
	double	ns_frame[ROUNDS];
	double	best, median;
	int	depth;
};

static void
summarise(struct result *r)
{
	qsort(r->ns_frame, ROUNDS, sizeof(r->ns_frame[0]), dbl_cmp);
	r->best = r->ns_frame[0];
	r->median = r->ns_frame[ROUNDS / 2];
}

/* A walk with unw_init_local() and unw_step(): libunwind's general path. */
static int
unw_step_walk(void **ips, int max)
{
	unw_context_t uc;
	unw_cursor_t cur;
	unw_word_t ip;
	int n;

	if (unw_getcontext(&uc) != 0 || unw_init_local(&cur, &uc) != 0)
		return (0);
	for (n = 0; n < max; n++) {
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) != 0)
			break;
		ips[n] = (void *)ip;
		if (unw_step(&cur) <= 0) {
			n++;
			break;
		}
	}
	return (n);
}

/*
 * The floor of any frame-pointer walker: the same bounds, alignment and
 * strictly-greater checks, inlined, without the text check.  Each frame's
 * load depends on the previous one, so this is bound by load latency;
 * neither walker can beat it.  Reads only this thread's own frames.
 */
static inline int
bare_chase(uintptr_t *pcs, uintptr_t fp, struct sc_range stack)
{
	const uintptr_t *rec;
	int n;

	for (n = 0; n < SC_STACK_MAX; ) {
		if (fp < stack.lo || fp > stack.hi - 16 || (fp & 7) != 0)
			break;
		rec = (const uintptr_t *)fp;
		pcs[n++] = rec[1];
		if (rec[0] <= fp)
			break;
		fp = rec[0];
	}
	return (n);
}

/* The bottom of the deep stack: every measure starts from this frame. */
SC_NOIPA static void
measure(struct result *ours, struct result *unw, struct result *step,
    struct result *bare)
{
	const struct sc_range *text;
	void *ips[UNW_MAX];
	struct sc_range stack;
	struct sc_stack st;
	uintptr_t fp;
	size_t ntext;
	double t0;
	long i, uiters, siters;
	int n, round;

	sc_text_ranges(&text, &ntext);
	stack = own_stack();
	fp = (uintptr_t)__builtin_frame_address(0);
	/*
	 * libunwind is slower: fewer iterations keep the rounds short (a
	 * tenth for unw_backtrace, a 200th for the unw_step loop).
	 */
	uiters = iters / 10 > 0 ? iters / 10 : 1;
	siters = iters / 200 > 0 ? iters / 200 : 1;

	/* Warm up (libunwind fills its caches on first use). */
	for (i = 0; i < 1000; i++) {
		sc_stack_walk(&st, fp, stack, text, ntext);
		unw_backtrace(ips, UNW_MAX);
		if (i < 10)
			unw_step_walk(ips, UNW_MAX);
	}
	ours->depth = sc_stack_walk(&st, fp, stack, text, ntext);
	unw->depth = unw_backtrace(ips, UNW_MAX);
	step->depth = unw_step_walk(ips, UNW_MAX);
	bare->depth = bare_chase(st.pcs, fp, stack);
	if (ours->depth < DEPTH || unw->depth < DEPTH || step->depth < DEPTH) {
		fprintf(stderr, "bench_walk: short stacks: ours %d, "
		    "unw_backtrace %d, unw_step %d (want >= %d)\n",
		    ours->depth, unw->depth, step->depth, DEPTH);
		exit(1);
	}

	for (round = 0; round < ROUNDS; round++) {
		t0 = now_ns();
		for (i = 0; i < iters; i++) {
			n = sc_stack_walk(&st, fp, stack, text, ntext);
			sink += st.pcs[n - 1];
		}
		ours->ns_frame[round] = (now_ns() - t0) /
		    ((double)iters * ours->depth);

		t0 = now_ns();
		for (i = 0; i < iters; i++) {
			n = bare_chase(st.pcs, fp, stack);
			sink += st.pcs[n - 1];
		}
		bare->ns_frame[round] = (now_ns() - t0) /
		    ((double)iters * bare->depth);

		t0 = now_ns();
		for (i = 0; i < uiters; i++) {
			n = unw_backtrace(ips, UNW_MAX);
			sink += (uintptr_t)ips[n - 1];
		}
		unw->ns_frame[round] = (now_ns() - t0) /
		    ((double)uiters * unw->depth);

		t0 = now_ns();
		for (i = 0; i < siters; i++) {
			n = unw_step_walk(ips, UNW_MAX);
			sink += (uintptr_t)ips[n - 1];
		}
		step->ns_frame[round] = (now_ns() - t0) /
		    ((double)siters * step->depth);
	}
	__asm__ volatile("" ::: "memory");
}

/* DEPTH real frames, each with a frame record, none inlined or merged. */
SC_NOIPA static void
deep(int n, struct result *ours, struct result *unw, struct result *step,
    struct result *bare)
{
	if (n > 0)
		deep(n - 1, ours, unw, step, bare);
	else
		measure(ours, unw, step, bare);
	__asm__ volatile("" ::: "memory");
}

static void
print_result(const char *what, const struct result *r)
{
	printf("%-28s depth %3d  best %7.2f ns/frame  median %7.2f ns/frame"
	    "  (%.1f ns/walk)\n", what, r->depth, r->best, r->median,
	    r->best * r->depth);
}

int
main(int argc, char **argv)
{
	struct result ours, unw, step, bare;

	if (argc > 1 && (iters = strtol(argv[1], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: %s [iterations]\n", argv[0]);
		return (2);
	}
	deep(DEPTH, &ours, &unw, &step, &bare);
	__asm__ volatile("" ::: "memory");
	summarise(&ours);
	summarise(&unw);
	summarise(&step);
	summarise(&bare);

	printf("bench_walk: %d recursive frames, %d rounds, %ld walks/round "
	    "(unw_backtrace: %ld, unw_step: %ld)\n", DEPTH, ROUNDS, iters,
	    iters / 10 > 0 ? iters / 10 : 1, iters / 200 > 0 ? iters / 200 : 1);
	print_result("sc_stack_walk", &ours);
	print_result("unw_backtrace", &unw);
	print_result("unw_init_local+unw_step", &step);
	print_result("floor: bare inlined fp chase", &bare);
	printf("ratio per frame (best): unw_backtrace/sc_stack_walk %.1fx, "
	    "unw_step/sc_stack_walk %.1fx (target >= 10x)\n",
	    unw.best / ours.best, step.best / ours.best);
	printf("ratio per frame (median): unw_backtrace/sc_stack_walk %.1fx, "
	    "unw_step/sc_stack_walk %.1fx\n",
	    unw.median / ours.median, step.median / ours.median);
	printf("sc_stack_walk/floor per frame (best): %.1fx\n",
	    ours.best / bare.best);
	return (0);
}
