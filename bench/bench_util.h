/* What the benchmarks share beyond stackcap/testing.h: a clock as a double,
 * sorting, die(), the calling pthread's stack, the 3-thread capture body. */
#ifndef SC_BENCH_UTIL_H
#define SC_BENCH_UTIL_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>

#include "stackcap.h"
#include "stackcap/testing.h"
#include "sc_internal.h"		/* sc__pthread_stack() */

/* The clock as a double, for the statistics (stackcap/testing.h's). */
static inline double
now_ns(void)
{
	return ((double)sc_now_ns());
}

/* A benchmark that cannot go on: say why and exit. */
static inline void
die(const char *what, int error)
{
	fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what,
	    strerror(error));
	exit(1);
}

/* qsort() comparison of doubles. */
static inline int
dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

/* The calling pthread's stack: the library's own helper. */
#define own_stack()	sc__pthread_stack()

/* ------------------------------------------------------------------------
 * The 3-thread capture body of bench_check (deterministic mode only: in
 * real concurrency a signal may land in bench_spin()'s own loop, whose pc
 * is no frame, and a right capture then lacks bench_spin(); bench_det,
 * which runs both, has an unchecked body of its own)
 * ------------------------------------------------------------------------ */

static atomic_int bench_spin_stop, bench_spin_started;

static SC_NOIPA __attribute__((unused)) void
bench_spin(void *arg)
{
	(void)arg;
	atomic_fetch_add(&bench_spin_started, 1);
	while (!atomic_load(&bench_spin_stop))
		sc_maybe_yield();
	SC_BARRIER();
}

/*
 * On m, from the calling plain pthread: two spinners (bench_spin()),
 * each captured ncaptures times.  It waits for both to be in
 * bench_spin(), not only RUNNING: a capture of a thread that has not run
 * yet is no IPI (real mode's runs were then up to 20 times faster than
 * the work measured), and a RUNNING spinner that has not left
 * sc__fork_exit() yet is captured right without bench_spin()'s frame
 * (DFS's first finding here, within one deviation, was a first version
 * of this body that called that answer wrong).  Returns 0 when every
 * capture returned 0 with bench_spin()'s frame, 1 when one did not, -1
 * when a call failed.
 */
static __attribute__((unused)) int
bench_capture_body(struct sc_machine *m, int ncaptures)
{
	struct sc_proc *p;
	struct sc_thread *td[2];
	struct sc_stack st;
	char sym[64];
	uintptr_t off;
	int i, k, j, nt, bad = 0, found;

	atomic_store(&bench_spin_stop, 0);
	atomic_store(&bench_spin_started, 0);
	if (sc_proc_create(m, "bench", &p) != 0)
		return (-1);
	for (nt = 0; nt < 2 && bad == 0; nt++)
		if (sc_thread_create(p, "spin", bench_spin, NULL,
		    &td[nt]) != 0)
			bad = -1;
	while (bad == 0 && atomic_load(&bench_spin_started) < 2) {
		sc_maybe_yield();	/* deterministic: a point */
		sched_yield();		/* real: the host's core */
	}
	for (k = 0; k < ncaptures && bad == 0; k++)
		for (i = 0; i < 2 && bad == 0; i++) {
			if (sc_stack_save_td_locked(p, td[i], &st) != 0) {
				bad = 1;
				break;
			}
			for (found = 0, j = 0; j < st.depth; j++)
				if (sc_symbolize(st.pcs[j], sym, sizeof(sym),
				    &off) == 0 &&
				    strcmp(sym, "bench_spin") == 0)
					found = 1;
			bad = !found;
		}
	atomic_store(&bench_spin_stop, 1);
	for (i = 0; i < nt - (bad < 0); i++)
		(void)sc_thread_join(td[i]);
	return (bad);
}

#endif /* !SC_BENCH_UTIL_H */
