/*
 * Thread bodies shared by the scheduler, thread, swap and lock tests
 * (test_sched.c, test_prio.c, test_thread.c, test_swap.c,
 * test_locks.c).  Simulated
 * threads never call CMocka: they record what they see in atomics that the
 * test thread asserts.
 */
#ifndef SC_TEST_BODIES_H
#define SC_TEST_BODIES_H

#include "sc_test.h"

/* ------------------------------------------------------------------------
 * Thread bodies
 * ------------------------------------------------------------------------ */

/* Spins on a flag, but politely (sc_maybe_yield), so it stays RUNNING. */
struct spin {
	atomic_int	spinning;
	atomic_int	release;
	atomic_int	returning;
};

static SC_TEST_UNUSED void
spin_polite(void *arg)
{
	struct spin *s = arg;

	atomic_store(&s->spinning, 1);
	while (!atomic_load(&s->release))
		sc_maybe_yield();
	atomic_store(&s->returning, 1);
}

/*
 * Binds itself to `cpu`, then spins there without calling the library
 * until `stop`: that CPU stays busy and nothing else runs on it.
 */
struct hog {
	int		cpu;
	atomic_int	on;		/* it runs, bound to cpu */
	atomic_int	stop;
};

static SC_TEST_UNUSED void
hog_bound(void *arg)
{
	struct hog *h = arg;

	(void)sc_sched_bind(h->cpu);
	atomic_store(&h->on, 1);
	while (!atomic_load(&h->stop))
		;
}

/* Records what a thread sees of itself when it runs. */
struct seen {
	atomic_int	ran;
	_Atomic(struct sc_thread *) self;
	atomic_int	state;
	atomic_int	oncpu;
	atomic_int	curcpu;
	atomic_int	lastcpu;
};

static SC_TEST_UNUSED void
record_self(void *arg)
{
	struct seen *s = arg;
	struct sc_thread *td = sc_curthread();

	atomic_store(&s->self, td);
	atomic_store(&s->state, (int)sc_thread_state(td));
	atomic_store(&s->oncpu, sc_thread_oncpu(td));
	atomic_store(&s->lastcpu, sc_thread_lastcpu(td));
	atomic_store(&s->curcpu, sc_curcpu());
	atomic_store(&s->ran, 1);
}

/* Sleeps on its wait channel until `go`; counts its returns from sleep. */
struct sleeper {
	atomic_int	go;
	atomic_int	returns;
	atomic_int	done;
	const char	*wmesg;
};

/* Asleep, and off its CPU (td_oncpu becomes NOCPU after the state). */
#define WAIT_ASLEEP(td)							\
	SC_WAIT_FOR(sc_thread_state(td) == SC_TDS_INHIBITED &&		\
	    (sc_thread_inhibitors(td) & SC_TDI_SLEEPING) != 0 &&	\
	    sc_thread_oncpu(td) == SC_NOCPU)

static SC_TEST_UNUSED void
sleep_until_go(void *arg)
{
	struct sleeper *s = arg;

	while (!atomic_load(&s->go)) {
		sc_sleep(s, s->wmesg);
		atomic_fetch_add(&s->returns, 1);
	}
	atomic_store(&s->done, 1);
}

#endif /* !SC_TEST_BODIES_H */
