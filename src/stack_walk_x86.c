/*
 * The frame-pointer walker and stack_save() for the calling thread.
 *
 * Kernel counterpart: sys/x86/x86/stack_machdep.c (stack_capture(),
 * stack_save()).  The protocol for other threads (stack_save_td()) lives in
 * stack_save_td.c; the handler side in ipi_sim.c.
 */
#include <pthread.h>
#include <stdbool.h>

#include "sc_internal.h"

/*
 * The one helper that loads another thread's frame records.  A frame record
 * of a thread that is running elsewhere, or one that a signal interrupted,
 * is plain memory the sanitizers did not see written in this context: ASan
 * may have redzones in the stack memory around it and TSan would report the
 * intended racy read of a live stack.  The walker already proves that the
 * 16 bytes lie inside the stack's mapping, so the load opts out of ASan and
 * TSan instrumentation.  It does not opt out in fuzz builds: there the
 * "stack" is the fuzzer's buffer, and the fuzzer must see every read.
 */
#if defined(SC_FUZZING)
#define SC_FRAME_LOAD_ATTR	__attribute__((noinline))
#else
#define SC_FRAME_LOAD_ATTR	__attribute__((noinline, \
	no_sanitize("address", "thread")))
#endif

SC_FRAME_LOAD_ATTR static void
sc_frame_load(uintptr_t fp, uintptr_t *nextp, uintptr_t *retp)
{
	const volatile uintptr_t *rec = (const volatile uintptr_t *)fp;

	*nextp = rec[0];
	*retp = rec[1];
}

int
sc_stack_walk(struct sc_stack *st, uintptr_t fp, struct sc_range stack,
    const struct sc_range *text, size_t ntext)
{
	uintptr_t next, ret;

	sc_stack_zero(st);
	for (;;) {
		if (!sc_frame_in_range(fp, stack))
			break;
		if ((fp & (sizeof(uintptr_t) - 1)) != 0)
			break;
		sc_frame_load(fp, &next, &ret);
		if (!sc_pc_in_text(ret, text, ntext))
			break;
		if (sc_stack_put(st, ret) == -1)
			break;
		if (next <= fp)
			break;
		fp = next;
	}
	return (st->depth);
}

/* The calling pthread's stack, cached per pthread. */
static __thread struct sc_range sc_self_stack SC_TLS_IE;

static struct sc_range
sc_pthread_stack_range(void)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;

	if (sc_self_stack.hi != 0)
		return (sc_self_stack);
	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return (sc_self_stack);
	if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
		sc_self_stack.lo = (uintptr_t)addr;
		sc_self_stack.hi = (uintptr_t)addr + size;
	}
	pthread_attr_destroy(&attr);
	return (sc_self_stack);
}

/*
 * noinline and noipa: the first recorded address must be the return address
 * into our caller, so this function needs a frame of its own.
 */
SC_NOIPA void
sc_stack_save(struct sc_stack *st)
{
	const struct sc_range *text;
	struct sc_range stack;
	size_t ntext;

	if (!sc__curthread_kstack(&stack))
		stack = sc_pthread_stack_range();
	sc_text_ranges(&text, &ntext);
	sc_stack_walk(st, (uintptr_t)__builtin_frame_address(0), stack, text,
	    ntext);
	__asm__ volatile("" ::: "memory");
}
