/* What the benchmarks share beyond stackcap/testing.h: a clock as a double,
 * sorting, die(), the calling pthread's stack. */
#ifndef SC_BENCH_UTIL_H
#define SC_BENCH_UTIL_H

#include <errno.h>
#include <pthread.h>
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

#endif /* !SC_BENCH_UTIL_H */
