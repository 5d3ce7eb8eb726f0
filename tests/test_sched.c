/*
 * The scheduler and the switch: sleep and wakeup, yield, migration
 * (sched_bind), many threads on more simulated CPUs than real cores.
 *
 * Kernel counterparts: sched_4bsd.c (sched_add, sched_switch, sched_bind),
 * kern_synch.c (mi_switch, sleep/wakeup).
 *
 * Rules: simulated threads never call CMocka (its assertions long-jump);
 * they record what they see in atomics that the test thread asserts.  No
 * test sleeps and hopes: each waits (bounded) for an observable condition,
 * a state, a flag or a counter, and no test asserts a timing.  States that
 * must hold "for a while" (a thread that must not run) are made
 * deterministic instead: the thread cannot run at all (it is off every run
 * queue, or the only CPU is held by a thread that never yields).
 */
#include <errno.h>
#include <stdlib.h>

#include "sc_internal.h"	/* td_lock and sp_owner, at the hook */
#include "sc_test.h"
#include "sc_test_bodies.h"

/* ------------------------------------------------------------------------
 * Sleep and wakeup
 * ------------------------------------------------------------------------ */

static void
test_sleep_wakeup(void **state)
{
	struct sleeper s = { .wmesg = "tsleep" };
	struct sc_thread *td;
	uint64_t sleeps0, wakeups0;

	sleeps0 = SC_COUNTER(tm, sleeps);
	wakeups0 = SC_COUNTER(tm, wakeups);
	td = sc_test_spawn("sleeper", sleep_until_go, &s);
	WAIT_ASLEEP(td);
	assert_int_equal(sc_thread_inhibitors(td), SC_TDI_SLEEPING);
	assert_string_equal(sc_thread_wmesg(td), "tsleep");
	assert_int_not_equal(sc_thread_lastcpu(td), SC_NOCPU);
	/* `sleeps` counts after the state changed: wait for it too. */
	SC_WAIT_FOR(SC_COUNTER(tm, sleeps) - sleeps0 == 1);

	/* A wakeup without the condition: it runs, finds no go, sleeps. */
	sc_wakeup(&s);
	SC_WAIT_FOR(atomic_load(&s.returns) == 1);
	SC_WAIT_FOR(SC_COUNTER(tm, sleeps) - sleeps0 == 2);
	WAIT_ASLEEP(td);
	assert_int_equal(SC_COUNTER(tm, wakeups) - wakeups0, 1);

	/* A wakeup of a channel nobody sleeps on wakes nobody. */
	sc_wakeup(&wakeups0);
	assert_int_equal(SC_COUNTER(tm, wakeups) - wakeups0, 1);

	atomic_store(&s.go, 1);
	sc_wakeup(&s);
	SC_WAIT_FOR(atomic_load(&s.done));
	assert_int_equal(sc_thread_join(td), 0);
	assert_int_equal(SC_COUNTER(tm, wakeups) - wakeups0, 2);
	assert_null(sc_thread_wmesg(td));
	assert_int_equal(sc_thread_state(td), SC_TDS_INACTIVE);
}

/* ------------------------------------------------------------------------
 * Yield
 * ------------------------------------------------------------------------ */

#define NYIELD	50

struct yielders {
	atomic_int	started;
	atomic_int	pos;
	char		log[2 * NYIELD];
};

struct yielder {
	struct yielders	*y;
	char		id;
};

static void
yield_log(void *arg)
{
	struct yielder *me = arg;
	struct yielders *y = me->y;
	int i;

	atomic_fetch_add(&y->started, 1);
	while (atomic_load(&y->started) < 2)
		sc_yield();
	for (i = 0; i < NYIELD; i++) {
		y->log[atomic_fetch_add(&y->pos, 1)] = me->id;
		sc_yield();
	}
}

/*
 * On 1 CPU two runnable threads that yield alternate strictly: a yield
 * puts the thread at the tail of the run queue and runs the head.
 */
static void
test_yield_alternates(void **state)
{
	struct yielders y = { 0 };
	struct yielder ya = { &y, 'A' }, yb = { &y, 'B' };
	struct sc_thread *a, *b;
	uint64_t sw0;
	int i;

	sw0 = SC_COUNTER(tm, switches);
	a = sc_test_spawn("yield-a", yield_log, &ya);
	b = sc_test_spawn("yield-b", yield_log, &yb);
	assert_int_equal(sc_thread_join(a), 0);
	assert_int_equal(sc_thread_join(b), 0);
	assert_int_equal(atomic_load(&y.pos), 2 * NYIELD);
	for (i = 1; i < 2 * NYIELD; i++)
		if (y.log[i] == y.log[i - 1])
			fail_msg("yield did not alternate at %d: %.*s", i,
			    2 * NYIELD, y.log);
	assert_true(SC_COUNTER(tm, switches) - sw0 >= 2 * NYIELD);
}

struct alone {
	atomic_int	done;
	atomic_int	cpu_before, cpu_after;
	_Atomic uint64_t sw_before, sw_after;
};

static void
yield_alone(void *arg)
{
	struct alone *al = arg;
	int i;

	atomic_store(&al->cpu_before, sc_curcpu());
	atomic_store(&al->sw_before, SC_COUNTER(sc_proc_machine(
	    sc_thread_proc(sc_curthread())), switches));
	for (i = 0; i < 10; i++)
		sc_yield();
	atomic_store(&al->sw_after, SC_COUNTER(sc_proc_machine(
	    sc_thread_proc(sc_curthread())), switches));
	atomic_store(&al->cpu_after, sc_curcpu());
	atomic_store(&al->done, 1);
}

/* On 1 CPU a thread that yields with nothing else runnable keeps the CPU:
 * no context switch at all. */
static void
test_yield_alone_keeps_cpu(void **state)
{
	struct alone al = { 0 };
	struct sc_thread *td;

	td = sc_test_spawn("alone", yield_alone, &al);
	assert_int_equal(sc_thread_join(td), 0);
	assert_int_equal(atomic_load(&al.done), 1);
	assert_int_equal(atomic_load(&al.sw_after), atomic_load(&al.sw_before));
	assert_int_equal(atomic_load(&al.cpu_before), 0);
	assert_int_equal(atomic_load(&al.cpu_after), 0);
}

/* ------------------------------------------------------------------------
 * Migration (sched_bind)
 * ------------------------------------------------------------------------ */

#define MAXTESTCPU	8

struct binder {
	int		ncpu;
	atomic_int	curcpu[MAXTESTCPU];
	atomic_int	lastcpu[MAXTESTCPU];
	atomic_int	oncpu[MAXTESTCPU];
	atomic_int	bind_rc[MAXTESTCPU];
	_Atomic uint64_t mig_first, mig_last, mig_rebind;
	atomic_int	after_yields;
	atomic_int	einval, unbind;
};

static uint64_t
my_migrations(void)
{
	return (SC_COUNTER(sc_proc_machine(sc_thread_proc(sc_curthread())),
	    migrations));
}

static void
bind_each(void *arg)
{
	struct binder *b = arg;
	struct sc_thread *td = sc_curthread();
	int cpu, i;

	for (cpu = 0; cpu < b->ncpu; cpu++) {
		atomic_store(&b->bind_rc[cpu], sc_sched_bind(cpu));
		atomic_store(&b->curcpu[cpu], sc_curcpu());
		atomic_store(&b->lastcpu[cpu], sc_thread_lastcpu(td));
		atomic_store(&b->oncpu[cpu], sc_thread_oncpu(td));
		if (cpu == 0)
			atomic_store(&b->mig_first, my_migrations());
	}
	atomic_store(&b->mig_last, my_migrations());
	/* Bound, a yield comes back on the same CPU; rebinding there does
	 * not move. */
	for (i = 0; i < 5; i++)
		sc_yield();
	atomic_store(&b->after_yields, sc_curcpu());
	(void)sc_sched_bind(b->ncpu - 1);
	atomic_store(&b->mig_rebind, my_migrations());
	atomic_store(&b->einval, sc_sched_bind(b->ncpu));
	atomic_store(&b->unbind, sc_sched_bind(SC_NOCPU));
}

/*
 * sched_bind() to each CPU in turn: the thread runs there (curcpu,
 * td_oncpu, td_lastcpu) and each move is exactly one `migrations`.
 */
static void
run_bind_each(int ncpu)
{
	struct binder b = { .ncpu = ncpu };
	struct sc_thread *td;
	int cpu;

	td = sc_test_spawn("binder", bind_each, &b);
	assert_int_equal(sc_thread_join(td), 0);
	for (cpu = 0; cpu < ncpu; cpu++) {
		assert_int_equal(atomic_load(&b.bind_rc[cpu]), 0);
		assert_int_equal(atomic_load(&b.curcpu[cpu]), cpu);
		assert_int_equal(atomic_load(&b.oncpu[cpu]), cpu);
		assert_int_equal(atomic_load(&b.lastcpu[cpu]), cpu);
	}
	/* Only this thread ever migrates (idle threads stay home). */
	assert_int_equal(atomic_load(&b.mig_last) - atomic_load(&b.mig_first),
	    ncpu - 1);
	assert_int_equal(atomic_load(&b.after_yields), ncpu - 1);
	assert_int_equal(atomic_load(&b.mig_rebind), atomic_load(&b.mig_last));
	assert_int_equal(atomic_load(&b.einval), EINVAL);
	assert_int_equal(atomic_load(&b.unbind), 0);
	assert_int_equal(sc_thread_lastcpu(td), ncpu - 1);
}

static void
test_migrate_2cpu(void **state)
{
	run_bind_each(2);
}

static void
test_migrate_8cpu(void **state)
{
	run_bind_each(8);
}

/* ------------------------------------------------------------------------
 * Many threads on more simulated CPUs than real cores
 * ------------------------------------------------------------------------ */

#define NMANY	32
#define NITER	100

struct many {
	atomic_int	count[NMANY];
	atomic_uint	cpus;		/* CPUs seen, a bit each */
	atomic_int	finished;
};

struct many_arg {
	struct many	*mn;
	int		i;
};

static void
many_body(void *arg)
{
	struct many_arg *ma = arg;
	struct many *mn = ma->mn;
	int k;

	for (k = 0; k < NITER; k++) {
		sc_yield();
		atomic_fetch_or(&mn->cpus, 1u << sc_curcpu());
		/* Woken by the test's repeated wakeups (none can be lost
		 * for good: the waker keeps waking until all finish). */
		sc_sleep(&mn->count[ma->i], "many");
		atomic_fetch_add(&mn->count[ma->i], 1);
	}
	atomic_fetch_add(&mn->finished, 1);
}

static void
test_many_threads_progress(void **state)
{
	static struct many mn;
	static struct many_arg args[NMANY];
	struct sc_thread *td[NMANY];
	struct sc_deadline dl;
	struct sc_counters c0, c1;
	int i;

	memset(&mn, 0, sizeof(mn));
	sc_machine_counters(tm, &c0);
	for (i = 0; i < NMANY; i++) {
		args[i].mn = &mn;
		args[i].i = i;
		td[i] = sc_test_spawn("many", many_body, &args[i]);
	}
	sc_test_deadline_start(&dl, SC_TEST_TIMEOUT_MS);
	while (atomic_load(&mn.finished) < NMANY) {
		for (i = 0; i < NMANY; i++)
			sc_wakeup(&mn.count[i]);
		if (sc_test_deadline_poll(&dl) &&
		    atomic_load(&mn.finished) < NMANY)
			fail_msg("only %d of %d threads finished",
			    atomic_load(&mn.finished), NMANY);
	}
	for (i = 0; i < NMANY; i++) {
		assert_int_equal(sc_thread_join(td[i]), 0);
		assert_int_equal(atomic_load(&mn.count[i]), NITER);
	}
	sc_machine_counters(tm, &c1);
	assert_int_equal(c1.exits - c0.exits, NMANY);
	assert_true(c1.sleeps - c0.sleeps >= NMANY * NITER);
	assert_true(c1.wakeups - c0.wakeups >= NMANY * NITER);
	assert_true(c1.switches - c0.switches >= NMANY * NITER);
	print_message("%d threads x %d on 8 CPUs: CPUs used 0x%02x, "
	    "%llu switches, %llu migrations\n", NMANY, NITER,
	    atomic_load(&mn.cpus),
	    (unsigned long long)(c1.switches - c0.switches),
	    (unsigned long long)(c1.migrations - c0.migrations));
}

/* ------------------------------------------------------------------------
 * ULE's sched_add() migration (sched_ule.c sched_setcpu())
 * ------------------------------------------------------------------------ */

struct mig {
	struct hog	hog;		/* bound to CPU 0 */
	_Atomic int	ran_on;		/* the ithread's CPU, plus one */
};

static void
mig_ithread(void *arg)
{
	struct mig *st = arg;

	atomic_store(&st->ran_on, sc_curcpu() + 1);
}

/*
 * An interrupt thread made while both CPUs idle is locked by CPU 0's run
 * queue (sched_pickcpu() at its creation).  Scheduled while a hog that
 * never yields holds CPU 0, ULE's sched_add() picks the idle CPU 1 and
 * moves the thread there through blocked_lock, as sched_setcpu() does:
 * CPU 1 runs it, and nothing was stolen.  Under 4BSD one queue serves
 * both CPUs: CPU 1 takes it from there.
 */
static void
test_add_migrates(void **state)
{
	struct sc_machine_config cfg;
	struct mig st = { .hog = { .cpu = 0 } };
	struct sc_thread *hog, *it;
	uint64_t steals0;

	sc_machine_config_init(&cfg);
	steals0 = SC_COUNTER(tm, steals);
	it = sc_test_spawn_ithread("moved", mig_ithread, &st);
	if (cfg.sched == SC_SCHED_ULE)
		assert_ptr_equal(atomic_load(&it->td_lock),
		    &tm->m_pcpu[0].pc_tdq_lock);
	hog = sc_test_spawn("hog", hog_bound, &st.hog);
	SC_WAIT_FOR(atomic_load(&st.hog.on) && sc_thread_oncpu(hog) == 0);
	assert_int_equal(sc_ithread_schedule(it), 0);
	SC_WAIT_FOR(atomic_load(&st.ran_on) != 0);
	assert_int_equal(atomic_load(&st.ran_on), 1 + 1);
	assert_int_equal(SC_COUNTER(tm, steals) - steals0, 0);
	atomic_store(&st.hog.stop, 1);
	assert_int_equal(sc_thread_join(it), 0);
	assert_int_equal(sc_thread_join(hog), 0);
}

/* ------------------------------------------------------------------------
 * The incoming thread's td_oncpu
 * ------------------------------------------------------------------------ */

struct incoming {
	struct sc_thread *_Atomic td;	/* the thread to watch */
	atomic_int	seen;
	atomic_int	oncpu;		/* its td_oncpu at the hook */
	atomic_int	state;		/* its state at the hook */
	atomic_int	locked;		/* its thread lock held at the hook */
};

/* SC_HOOK_SWITCH_INCOMING: interrupts disabled, atomics only. */
static void
incoming_hook(void *arg, enum sc_hook_point point, struct sc_thread *td)
{
	struct incoming *in = arg;
	struct sc_spin *sp;

	if (point != SC_HOOK_SWITCH_INCOMING || td != atomic_load(&in->td) ||
	    atomic_load(&in->seen))
		return;
	sp = atomic_load(&td->td_lock);
	atomic_store(&in->oncpu, sc_thread_oncpu(td));
	atomic_store(&in->state, sc_thread_state(td));
	atomic_store(&in->locked, atomic_load(&sp->sp_owner) != 0);
	atomic_store(&in->seen, 1);
}

/*
 * Both schedulers put a chosen thread on its CPU with td_oncpu still
 * NOCPU; it sets its own once cpu_switch() returns into it (sched_ule.c
 * and sched_4bsd.c, sched_switch()).  Under ULE its lock is free
 * meanwhile (the window of ule-incoming-nocpu); under 4BSD it is the
 * sched_lock, held until the store, so whoever holds the thread lock never
 * sees RUNNING with NOCPU.
 */
static void
test_incoming_sets_own_oncpu(void **state)
{
	struct sc_machine_config cfg;
	struct sleeper s = { .wmesg = "incoming" };
	struct incoming in = { .td = NULL };
	struct sc_thread *td;

	sc_machine_config_init(&cfg);
	td = sc_test_spawn("incoming", sleep_until_go, &s);
	WAIT_ASLEEP(td);
	atomic_store(&in.td, td);
	sc_machine_set_hook(tm, incoming_hook, &in);
	atomic_store(&s.go, 1);
	sc_wakeup(&s);
	SC_WAIT_FOR(atomic_load(&s.done));
	sc_machine_set_hook(tm, NULL, NULL);
	assert_int_equal(sc_thread_join(td), 0);
	assert_true(atomic_load(&in.seen));
	assert_int_equal(atomic_load(&in.oncpu), SC_NOCPU);
	assert_int_equal(atomic_load(&in.state), SC_TDS_RUNNING);
	assert_int_equal(atomic_load(&in.locked),
	    cfg.sched == SC_SCHED_4BSD);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sleep_wakeup,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_yield_alternates,
		    sc_test_setup_1cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_yield_alone_keeps_cpu,
		    sc_test_setup_1cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_migrate_2cpu,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_migrate_8cpu,
		    sc_test_setup_8cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_many_threads_progress,
		    sc_test_setup_8cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_add_migrates,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_incoming_sets_own_oncpu,
		    sc_test_setup_2cpu, sc_test_teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
