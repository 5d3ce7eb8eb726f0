/* What the benchmarks share: call-chain attributes, a clock, sorting, the
 * calling pthread's stack. */
#ifndef SC_BENCH_UTIL_H
#define SC_BENCH_UTIL_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "stackcap.h"

/* Neither inlined, cloned nor analysed across calls (clang: no noipa). */
#if defined(__clang__)
#define BENCH_NOIPA	__attribute__((noinline))
#else
#define BENCH_NOIPA	__attribute__((noinline, noipa))
#endif
#define BENCH_BARRIER()	__asm__ volatile("" ::: "memory")

static inline double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec * 1e9 + (double)ts.tv_nsec);
}

/* qsort() comparison of doubles. */
static inline int
dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

/* The calling pthread's stack ({0, 0} if unknown). */
static inline struct sc_range
own_stack(void)
{
	struct sc_range r = { 0, 0 };
	pthread_attr_t attr;
	void *addr;
	size_t size;

	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return (r);
	if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
		r.lo = (uintptr_t)addr;
		r.hi = (uintptr_t)addr + size;
	}
	pthread_attr_destroy(&attr);
	return (r);
}

#endif /* !SC_BENCH_UTIL_H */
