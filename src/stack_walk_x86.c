/*
 * The frame-pointer walker and stack_save() for the calling thread: the
 * frame load, the walk, FreeBSD 12's walk (SC_PROTO_NMI).
 *
 * Kernel counterparts: stack_capture() and stack_save() in
 * sys/x86/x86/stack_machdep.c (FreeBSD 12's stack_capture() for the
 * fbsd12 walk).  The frame checks it makes, kstack_contains() and
 * INKERNEL(), are frame_bounds.h's; the protocol for other threads
 * (stack_save_td()) is stack_machdep.c; the handler side, mp_x86.c.
 */
#include <pthread.h>
#include <stdbool.h>

#include "sc_internal.h"
#include "frame_bounds.h"

/*
 * The one helper that loads another thread's frame records.  A frame record
 * of a thread that is running elsewhere, or one that a signal interrupted,
 * is plain memory the sanitizers did not see written in this context: ASan
 * may have redzones in the stack memory around it and TSan would report the
 * intended racy read of a live stack.  The walker already proves that the
 * 16 bytes lie inside the stack's mapping, so the load opts out of ASan and
 * TSan instrumentation (and so is never inlined there).  It does not opt
 * out in fuzz builds: there the "stack" is the fuzzer's buffer, and the
 * fuzzer must see every read.  Elsewhere it is inlined into the walk.
 */
#if defined(SC_FUZZING)
#define SC_FRAME_LOAD_ATTR	__attribute__((always_inline)) inline
#elif defined(SC_SANITIZER_ADDRESS) || defined(SC_SANITIZER_THREAD)
/* A function that opts out is never inlined into one that does not. */
#define SC_FRAME_LOAD_ATTR	__attribute__((noinline, \
	no_sanitize("address", "thread")))
#else
#define SC_FRAME_LOAD_ATTR	__attribute__((always_inline)) inline
#endif

struct sc_frame_rec {
	uintptr_t	next, ret;
};

/* FreeBSD 12's walker loads records at any address (no alignment check):
 * a type of alignment 1 keeps UBSan's alignment check quiet there. */
typedef uintptr_t sc_uptr_unaligned __attribute__((aligned(1)));

/* Returned by value, in %rax:%rdx: no store and reload per frame. */
SC_FRAME_LOAD_ATTR static struct sc_frame_rec
sc_frame_load(uintptr_t fp)
{
	const volatile sc_uptr_unaligned *rec =
	    (const volatile sc_uptr_unaligned *)fp;
	struct sc_frame_rec r;

	r.next = rec[0];
	r.ret = rec[1];
	return (r);
}

/*
 * The rules are those of sc__kstack_contains() and sc__text_lookup()
 * (frame_bounds.h), in the
 * order docs/protocol.md ("The walk") gives, written out here because this
 * loop is the hot path: the range test against a precomputed last fp, and
 * a one-entry cache of the text range that held the previous return
 * address (most frames return into the same object).
 *
 * fbsd12 selects FreeBSD 12's bounds (SC_PROTO_NMI): a frame pointer
 * anywhere in [lo, hi), aligned or not, as 12's stack_capture() tested
 * it, so that the 16-byte record of a frame pointer in the last 15 bytes
 * would be read past the stack's end (kstack_contains() in 13 tests the
 * whole record).  There the walk stops, without the read, and says so in
 * *overrun.  Inlined with a constant fbsd12: no cost to the final walker.
 */
__attribute__((always_inline)) static inline int
sc_stack_walk1(struct sc_stack *st, uintptr_t fp, struct sc_range stack,
    const struct sc_range *text, size_t ntext, bool fbsd12, bool *overrun)
{
	struct sc_range hit = { 0, 0 };
	struct sc_frame_rec r;
	uintptr_t last;
	int depth = 0;

	if (stack.hi < stack.lo || stack.hi - stack.lo < 16)
		goto out;
	last = stack.hi - 16;		/* the last fp whose record fits */
	for (;;) {
		if (fp < stack.lo || fp >= stack.hi)
			break;
		if (fbsd12 && fp > last) {
			*overrun = true;
			break;
		}
		if (fp > last)
			break;
		if (!fbsd12 && (fp & (sizeof(uintptr_t) - 1)) != 0)
			break;
		r = sc_frame_load(fp);
		if ((r.ret < hit.lo || r.ret >= hit.hi) &&
		    !sc__text_lookup(r.ret, text, ntext, &hit))
			break;
		if (depth == SC_STACK_MAX)
			break;
		st->pcs[depth++] = r.ret;
		if (r.next <= fp)
			break;
		fp = r.next;
	}
out:
	st->depth = depth;
	return (depth);
}

int
sc_stack_walk(struct sc_stack *st, uintptr_t fp, struct sc_range stack,
    const struct sc_range *text, size_t ntext)
{
	return (sc_stack_walk1(st, fp, stack, text, ntext, false, NULL));
}

int
sc__stack_walk_fbsd12(struct sc_stack *st, uintptr_t fp,
    struct sc_range stack, const struct sc_range *text, size_t ntext,
    bool *overrun)
{
	*overrun = false;
	return (sc_stack_walk1(st, fp, stack, text, ntext, true, overrun));
}

/* The calling pthread's stack, cached per pthread. */
static __thread struct sc_range sc_self_stack SC_TLS_IE;

struct sc_range
sc__pthread_stack(void)
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
		stack = sc__pthread_stack();
	sc_text_ranges(&text, &ntext);
	sc_stack_walk(st, (uintptr_t)__builtin_frame_address(0), stack, text,
	    ntext);
	__asm__ volatile("" ::: "memory");
}
