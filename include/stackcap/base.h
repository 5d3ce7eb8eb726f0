/*
 * stackcap/base.h: the few definitions that the library itself and
 * stackcap/testing.h both use: a function that keeps its own frame, a
 * compiler barrier, the monotonic clock.  The library includes this header
 * and never testing.h (a header written for its users); it is installed
 * only because testing.h builds on it.  Users include stackcap/testing.h.
 * Header only; nothing here is exported.
 */
#ifndef STACKCAP_BASE_H
#define STACKCAP_BASE_H

#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * SC_NOIPA: neither inlined, cloned nor analysed across calls, so the
 * function keeps its own frame and symbol (clang has no noipa; noinline is
 * what it has).  SC_BARRIER(): put it after each call of a chain, so the
 * call is not a tail call and the caller's frame stays on the stack.
 */
#if defined(__clang__)
#define SC_NOIPA	__attribute__((noinline))
#else
#define SC_NOIPA	__attribute__((noinline, noipa))
#endif
#define SC_BARRIER()	__asm__ volatile("" ::: "memory")

/* CLOCK_MONOTONIC in nanoseconds.  Context: any, a signal handler too. */
static inline uint64_t
sc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec);
}

#ifdef __cplusplus
}
#endif

#endif /* !STACKCAP_BASE_H */
