/*
 * Sanitizer annotations for hand-switched stacks (internal).
 *
 * ASan must be told when %rsp moves to another stack (fiber switches), or
 * it mistakes the new stack for a stack overflow and loses fake frames;
 * TSan keeps one shadow state per fiber.  Without sanitizers all of these
 * compile to nothing.
 */
#ifndef SC_SANITIZER_H
#define SC_SANITIZER_H

#include <time.h>

#include "sc_internal.h"

#if defined(SC_SANITIZER_ADDRESS)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(SC_SANITIZER_THREAD)
#include <sanitizer/tsan_interface.h>
#endif

/*
 * A function that writes below another context's %rsp (a signal handler
 * that builds a frame there): ASan's shadow of memory below %rsp is
 * nobody's, so its checks there say nothing.
 */
#if defined(SC_SANITIZER_ADDRESS)
#define SC_SAN_NO_ASAN	__attribute__((no_sanitize_address))
#else
#define SC_SAN_NO_ASAN
#endif

#if defined(SC_SANITIZER_ADDRESS) || defined(SC_SANITIZER_THREAD)
#define SC_SAN_STACK_SCALE	4 /* as FreeBSD adds KSTACK pages for KASAN */
#else
#define SC_SAN_STACK_SCALE	1
#endif

/* About to switch to the stack `to`; *fakep keeps this context's fake
 * stack (NULL: this context never comes back). */
static inline void
sc__san_start_switch(void **fakep, struct sc_range to)
{
#if defined(SC_SANITIZER_ADDRESS)
	__sanitizer_start_switch_fiber(fakep, (const void *)to.lo,
	    to.hi - to.lo);
#else
	(void)fakep;
	(void)to;
#endif
}

/* Back on this context's stack. */
static inline void
sc__san_finish_switch(void *fake)
{
#if defined(SC_SANITIZER_ADDRESS)
	__sanitizer_finish_switch_fiber(fake, NULL, NULL);
#else
	(void)fake;
#endif
}

static inline void
sc__san_tsan_switch(void *fiber)
{
#if defined(SC_SANITIZER_THREAD)
	if (fiber != NULL)
		__tsan_switch_to_fiber(fiber, 0);
#else
	(void)fiber;
#endif
}

static inline void *
sc__san_tsan_create_fiber(void)
{
#if defined(SC_SANITIZER_THREAD)
	return (__tsan_create_fiber(0));
#else
	return (NULL);
#endif
}

static inline void *
sc__san_tsan_current_fiber(void)
{
#if defined(SC_SANITIZER_THREAD)
	return (__tsan_get_current_fiber());
#else
	return (NULL);
#endif
}

static inline void
sc__san_tsan_destroy_fiber(void *fiber)
{
#if defined(SC_SANITIZER_THREAD)
	if (fiber != NULL)
		__tsan_destroy_fiber(fiber);
#else
	(void)fiber;
#endif
}

/* Tell the sanitizers about a switch to `to` (fakep NULL: no return). */
static inline void
sc__san_fiber_switch(void **fakep, struct sc_range to, void *to_tsan_fiber)
{
	sc__san_start_switch(fakep, to);
	sc__san_tsan_switch(to_tsan_fiber);
}

/* Forget ASan's poisoning of a stack about to be unmapped or protected. */
static inline void
sc__san_unpoison(struct sc_range r)
{
#if defined(SC_SANITIZER_ADDRESS)
	ASAN_UNPOISON_MEMORY_REGION((void *)r.lo, r.hi - r.lo);
#else
	(void)r;
#endif
}

/*
 * TSan runs an asynchronous signal's handler late, at the thread's next
 * interceptor call, on the thread's own stack and with the context of the
 * arrival, which may be long gone.  Loops that wait for an IPI (the idle
 * loop, spinning targets through sc_maybe_yield()) call an intercepted
 * function here so that a pending IPI runs, and leave the frame of their
 * caller in pc_tsan_poll_rbp: the handler walks from there.  Without TSan
 * this is nothing.
 */
#if defined(SC_SANITIZER_THREAD)
#define sc__san_poll_signals(pc) do {					\
	struct timespec ts_ = { 0, 0 };					\
									\
	atomic_store(&(pc)->pc_tsan_poll_rbp,				\
	    (uintptr_t)__builtin_frame_address(0));			\
	nanosleep(&ts_, NULL);						\
	atomic_store(&(pc)->pc_tsan_poll_rbp, 0);			\
} while (0)
#else
#define sc__san_poll_signals(pc)	((void)(pc))
#endif

#endif /* !SC_SANITIZER_H */
