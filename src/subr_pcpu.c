/*
 * Per-CPU data: which CPU this pthread is, curthread, curcpu.
 *
 * Kernel counterpart: sys/kern/subr_pcpu.c and the PCPU_GET()/curthread
 * accessors of sys/amd64/include/pcpu.h.  A CPU is a pthread, so its
 * struct sc_pcpu is found through a thread-local pointer; a plain pthread
 * (one that is not a simulated CPU) has none.
 */
#include "sc_internal.h"

/* The CPU this pthread is, or NULL; read through sc__pcpu_get(). */
__thread struct sc_pcpu *sc__pcpu_self SC_TLS_IE;
/* A per-pthread token that owns locks taken outside the machine. */
static __thread char sc_pthread_token SC_TLS_IE;

void
sc__pcpu_set(struct sc_pcpu *pc)
{
	sc__pcpu_self = pc;
}

struct sc_pcpu *
sc__pcpu_handler(void)
{
	return (sc__pcpu_self);
}

/*
 * sc__owner_self() of a plain pthread, which never switches stacks: the
 * address of its token may be computed once.
 */
uintptr_t
sc__owner_plain(void)
{
	return ((uintptr_t)&sc_pthread_token);
}

struct sc_thread *
sc_curthread(void)
{
	struct sc_pcpu *pc = sc__pcpu_get();

	return (pc != NULL ? atomic_load_explicit(&pc->pc_curthread,
	    memory_order_relaxed) : NULL);
}

int
sc_curcpu(void)
{
	struct sc_pcpu *pc = sc__pcpu_get();

	return (pc != NULL ? pc->pc_cpuid : SC_NOCPU);
}

bool
sc__curthread_kstack(struct sc_range *r)
{
	struct sc_thread *td = sc_curthread();

	if (td == NULL)
		return (false);
	*r = td->td_kstack;
	return (true);
}
