/*
 * Per-CPU data (internal): the CPU this pthread is, and who owns what it
 * locks.  Kernel counterpart: the PCPU_GET()/curthread accessors of
 * sys/amd64/include/pcpu.h, which read %gs; ours read %fs, the thread
 * pointer of the pthread that the simulated CPU is (subr_pcpu.c sets it).
 * Included by sc_internal.h after struct sc_pcpu.
 */
#ifndef SC_PCPU_H
#define SC_PCPU_H

/* The CPU this pthread is, or NULL: a plain pthread (subr_pcpu.c). */
extern __thread struct sc_pcpu *sc__pcpu_self SC_TLS_IE;
uintptr_t sc__owner_plain(void);

/*
 * sc__pcpu_self, read afresh.  A simulated thread may resume on another
 * CPU pthread after any call that may switch, and the compiler may keep
 * the address of a TLS variable (the thread pointer) for the whole of a
 * function, across such a call.  So the read is one volatile asm: an
 * initial-exec load relative to %fs, whose base the processor reads at
 * each load; the "memory" clobber keeps the compiler from moving it
 * across a call or reusing an earlier one.  Inline (before, a function
 * that was never inlined, SC_NOIPA): the run-queue helpers' lock
 * assertions pay two loads, not three calls (bench_sched, docs/
 * benchmarks.md).
 */
static inline struct sc_pcpu *
sc__pcpu_get(void)
{
	struct sc_pcpu *pc;

	__asm__ volatile("movq sc__pcpu_self@gottpoff(%%rip), %0\n\t"
	    "movq %%fs:(%0), %0" : "=r" (pc) : : "memory");
	return (pc);
}

/*
 * Who owns what this pthread locks now: the simulated thread that runs on
 * it, or on a plain pthread a token of its own (sc__owner_plain()).
 */
static inline uintptr_t
sc__owner_self(void)
{
	struct sc_pcpu *pc = sc__pcpu_get();

	if (__builtin_expect(pc != NULL, 1))
		return ((uintptr_t)atomic_load_explicit(&pc->pc_curthread,
		    memory_order_relaxed));
	return (sc__owner_plain());
}

#endif /* !SC_PCPU_H */
