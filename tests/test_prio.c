/*
 * Priorities and the run queues by priority: the order in which queued
 * threads run, sc_thread_set_priority() (sched_prio()) and
 * sc_thread_priority(), 4BSD's choice between its per-CPU and its global
 * queue, ULE's stealing at a switch (tdq_trysteal()) and when idle
 * (tdq_idled()).
 *
 * Kernel counterparts: sys/kern/kern_switch.c (runq_add(), runq_choose(),
 * runq_remove()), sys/kern/sched_4bsd.c (sched_priority(),
 * sched_choose()), sys/kern/sched_ule.c (sched_thread_priority(),
 * sched_switch(), tdq_trysteal(), tdq_move()).
 *
 * As in test_sched.c: simulated threads never call CMocka, they record
 * what they see in atomics that the test thread asserts; a thread that
 * must not run yet cannot run at all (the only CPU is held by a thread
 * that never yields), so no order depends on timing.
 */
#include <errno.h>
#include <stdlib.h>

#include "sc_internal.h"	/* td_lock, the run-queue locks */
#include "sc_test.h"
#include "sc_test_bodies.h"

/* ------------------------------------------------------------------------
 * A log of the order in which threads ran
 * ------------------------------------------------------------------------ */

#define NLOG	16

struct runlog {
	_Atomic int	release;	/* the blocker may return */
	_Atomic int	blocking;	/* the blocker holds the CPU */
	_Atomic int	pos;
	char		log[NLOG];
};

struct logger {
	struct runlog	*rl;
	char		id;
};

static void
log_self(void *arg)
{
	struct logger *me = arg;

	me->rl->log[atomic_fetch_add(&me->rl->pos, 1)] = me->id;
}

/* Hold the only CPU, never yielding, until released. */
static void
block_cpu(void *arg)
{
	struct runlog *rl = arg;

	atomic_store(&rl->blocking, 1);
	while (!atomic_load(&rl->release))
		;
}

/*
 * A blocker at the best priority, so that nothing queued after it runs
 * before the test releases it: 1 CPU, held.
 */
static struct sc_thread *
spawn_blocker(struct runlog *rl)
{
	struct sc_thread *td;

	td = sc_test_spawn("blocker", block_cpu, rl);
	SC_WAIT_FOR(atomic_load(&rl->blocking));
	assert_int_equal(sc_thread_set_priority(td, SC_PRI_MIN), 0);
	return (td);
}

/* ------------------------------------------------------------------------
 * Priority order, FIFO among equals, a queued thread moved
 * ------------------------------------------------------------------------ */

/*
 * Six threads queued in the order A..F behind a blocker, all at the
 * default timesharing priority, then changed while queued: C better (it
 * leaves its queue for a better one), A worse (to a worse queue), E by
 * one (the same queue of 4 priorities: it keeps its place, as runq_add()
 * makes priorities that differ by less than RQ_PPQ equal).  An interrupt
 * thread scheduled last runs first, at its ithread priority.  Equal
 * queues run first come, first served.
 */
static void
test_priority_order(void **state)
{
	static const char order[] = "ICBDEFA";
	struct runlog rl = { 0 };
	struct logger lg[7];
	struct sc_thread *blocker, *td[7];
	int i;

	blocker = spawn_blocker(&rl);
	for (i = 0; i < 6; i++) {
		lg[i] = (struct logger){ &rl, (char)('A' + i) };
		td[i] = sc_test_spawn("queued", log_self, &lg[i]);
		assert_int_equal(sc_thread_state(td[i]), SC_TDS_RUNQ);
		assert_int_equal(sc_thread_priority(td[i]),
		    SC_PRI_MIN_TIMESHARE);
	}
	lg[6] = (struct logger){ &rl, 'I' };
	td[6] = sc_test_spawn_ithread("ithread", log_self, &lg[6]);
	assert_int_equal(sc_thread_priority(td[6]), SC_PI_DULL);

	assert_int_equal(sc_thread_set_priority(td[2],
	    SC_PRI_MIN_TIMESHARE - 40), 0);
	assert_int_equal(sc_thread_set_priority(td[0],
	    SC_PRI_MAX_TIMESHARE), 0);
	assert_int_equal(sc_thread_set_priority(td[4],
	    SC_PRI_MIN_TIMESHARE + 1), 0);
	assert_int_equal(sc_ithread_schedule(td[6]), 0);
	for (i = 0; i < 7; i++)
		assert_int_equal(sc_thread_state(td[i]), SC_TDS_RUNQ);
	assert_int_equal(atomic_load(&rl.pos), 0);

	atomic_store(&rl.release, 1);
	for (i = 0; i < 7; i++)
		assert_int_equal(sc_thread_join(td[i]), 0);
	assert_int_equal(sc_thread_join(blocker), 0);
	assert_int_equal(atomic_load(&rl.pos), 7);
	assert_memory_equal(rl.log, order, 7);
}

/* ------------------------------------------------------------------------
 * Set and get, bad input
 * ------------------------------------------------------------------------ */

static void
test_set_get(void **state)
{
	struct sleeper s = { .wmesg = "prio" };
	struct sc_thread *td, *idle;

	td = sc_test_spawn("sleeper", sleep_until_go, &s);
	WAIT_ASLEEP(td);
	idle = sc_machine_idlethread(tm, 0);
	assert_int_equal(sc_thread_priority(td), SC_PRI_MIN_TIMESHARE);
	assert_int_equal(sc_thread_priority(idle), SC_PRI_MAX_IDLE);

	/* Every priority of the range, the bounds too, on a sleeper. */
	assert_int_equal(sc_thread_set_priority(td, SC_PRI_MIN), 0);
	assert_int_equal(sc_thread_priority(td), SC_PRI_MIN);
	assert_int_equal(sc_thread_set_priority(td, SC_PRI_MAX), 0);
	assert_int_equal(sc_thread_priority(td), SC_PRI_MAX);
	assert_int_equal(sc_thread_set_priority(td, SC_PRI_MIN_KERN), 0);
	assert_int_equal(sc_thread_priority(td), SC_PRI_MIN_KERN);

	/* Out of range, or the idle thread: EINVAL, nothing changed. */
	assert_int_equal(sc_thread_set_priority(td, SC_PRI_MIN - 1), EINVAL);
	assert_int_equal(sc_thread_set_priority(td, SC_PRI_MAX + 1), EINVAL);
	assert_int_equal(sc_thread_set_priority(td, -1000), EINVAL);
	assert_int_equal(sc_thread_priority(td), SC_PRI_MIN_KERN);
	assert_int_equal(sc_thread_set_priority(idle, SC_PRI_MIN_TIMESHARE),
	    EINVAL);
	assert_int_equal(sc_thread_priority(idle), SC_PRI_MAX_IDLE);

	/* NULL: a KASSERT; with a handler that returns, EINVAL and -1. */
	sc_set_panic_handler(sc_test_panic_record);
	assert_int_equal(sc_thread_set_priority(NULL, SC_PRI_MIN), EINVAL);
	assert_int_equal(sc_test_panic_count(), 1);
	assert_non_null(strstr(sc_test_panic_msg(), "NULL thread"));
	assert_int_equal(sc_thread_priority(NULL), -1);
	assert_int_equal(sc_test_panic_count(), 2);
	/* The caller holds td's thread lock, which the call takes. */
	sc_thread_lock(td);
	assert_int_equal(sc_thread_set_priority(td, SC_PRI_MIN), EINVAL);
	sc_thread_unlock(td);
	assert_int_equal(sc_test_panic_count(), 3);
	assert_non_null(strstr(sc_test_panic_msg(), "holds its thread lock"));
	assert_int_equal(sc_thread_priority(td), SC_PRI_MIN_KERN);
	sc_set_panic_handler(NULL);

	/* The priority stays through a sleep and a wakeup. */
	atomic_store(&s.go, 1);
	sc_wakeup(&s);
	SC_WAIT_FOR(atomic_load(&s.done));
	assert_int_equal(sc_thread_priority(td), SC_PRI_MIN_KERN);
	assert_int_equal(sc_thread_join(td), 0);
}

/*
 * A running thread given a worse priority than a queued one keeps its
 * CPU (no preemption here): the queued thread runs at the running one's
 * next switch, and first.
 */
struct demoted {
	struct runlog	*rl;
	_Atomic int	demoted;	/* the test changed our priority */
};

static void
run_demoted(void *arg)
{
	struct demoted *d = arg;

	atomic_store(&d->rl->blocking, 1);
	while (!atomic_load(&d->demoted))
		;
	d->rl->log[atomic_fetch_add(&d->rl->pos, 1)] = 'R';
	sc_yield();
	d->rl->log[atomic_fetch_add(&d->rl->pos, 1)] = 'r';
}

static void
test_running_keeps_cpu(void **state)
{
	struct runlog rl = { 0 };
	struct demoted d = { &rl, 0 };
	struct logger lq = { &rl, 'Q' };
	struct sc_thread *run, *q;

	run = sc_test_spawn("running", run_demoted, &d);
	SC_WAIT_FOR(atomic_load(&rl.blocking));
	q = sc_test_spawn("queued", log_self, &lq);
	assert_int_equal(sc_thread_set_priority(run, SC_PRI_MAX_TIMESHARE),
	    0);
	assert_int_equal(sc_thread_state(run), SC_TDS_RUNNING);
	assert_int_equal(sc_thread_priority(run), SC_PRI_MAX_TIMESHARE);
	assert_int_equal(sc_thread_state(q), SC_TDS_RUNQ);
	atomic_store(&d.demoted, 1);
	assert_int_equal(sc_thread_join(run), 0);
	assert_int_equal(sc_thread_join(q), 0);
	assert_int_equal(atomic_load(&rl.pos), 3);
	assert_memory_equal(rl.log, "RQr", 3);
}

/* ------------------------------------------------------------------------
 * 4BSD's per-CPU queue against its global queue (sched_choose())
 * ------------------------------------------------------------------------ */

struct pcpu_case {
	int		bound_pri;	/* P: bound to CPU 0, yields */
	int		global_pri;	/* G: on the global queue */
	char		first_4bsd;	/* who runs after P's yield */
	char		first_ule;
};

struct bound_yielder {
	struct runlog	*rl;
	_Atomic int	go;
};

static void
bind_then_yield(void *arg)
{
	struct bound_yielder *b = arg;

	(void)sc_sched_bind(0);
	atomic_store(&b->rl->blocking, 1);
	while (!atomic_load(&b->go))
		;
	sc_yield();
	b->rl->log[atomic_fetch_add(&b->rl->pos, 1)] = 'P';
}

/*
 * On 1 CPU, P binds itself to CPU 0 and yields while G waits: under 4BSD
 * P goes on CPU 0's own queue and G is on the global one, and
 * sched_choose() takes P only when P's priority is strictly better than
 * G's (by priority, not by queue: 160 against 161, one queue, is P's).
 * Under ULE both are on CPU 0's one queue: by queue, then first come,
 * first served (G was there first).
 */
static void
test_4bsd_pcpu_vs_global(void **state)
{
	static const struct pcpu_case cases[] = {
		{ SC_PRI_MIN_TIMESHARE, SC_PRI_MIN_TIMESHARE, 'G', 'G' },
		{ SC_PRI_MIN_TIMESHARE, SC_PRI_MIN_TIMESHARE + 1, 'P', 'G' },
		{ SC_PRI_MIN_TIMESHARE + 1, SC_PRI_MIN_TIMESHARE, 'G', 'G' },
		{ SC_PRI_MIN_TIMESHARE - 4, SC_PRI_MIN_TIMESHARE, 'P', 'P' },
		{ SC_PRI_MIN_TIMESHARE, SC_PRI_MIN_TIMESHARE - 4, 'G', 'G' },
	};
	struct sc_machine_config cfg;
	struct sc_thread *p, *g;
	size_t i;

	sc_machine_config_init(&cfg);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct runlog rl = { 0 };
		struct bound_yielder b = { &rl, 0 };
		struct logger lg = { &rl, 'G' };
		char want = cfg.sched == SC_SCHED_4BSD ?
		    cases[i].first_4bsd : cases[i].first_ule;

		p = sc_test_spawn("bound", bind_then_yield, &b);
		SC_WAIT_FOR(atomic_load(&rl.blocking));
		assert_int_equal(sc_thread_set_priority(p,
		    cases[i].bound_pri), 0);
		g = sc_test_spawn("global", log_self, &lg);
		assert_int_equal(sc_thread_set_priority(g,
		    cases[i].global_pri), 0);
		assert_int_equal(sc_thread_state(g), SC_TDS_RUNQ);
		atomic_store(&b.go, 1);
		assert_int_equal(sc_thread_join(p), 0);
		assert_int_equal(sc_thread_join(g), 0);
		assert_int_equal(atomic_load(&rl.pos), 2);
		if (rl.log[0] != want)
			fail_msg("case %zu (P %d, G %d): %c ran first, not %c",
			    i, cases[i].bound_pri, cases[i].global_pri,
			    rl.log[0], want);
	}
}

/* ------------------------------------------------------------------------
 * ULE's tdq_trysteal(): a CPU whose queue empties takes a busy CPU's work
 * ------------------------------------------------------------------------ */

struct trysteal {
	struct sleeper	s;		/* the sleeper bound to CPU 1 */
	_Atomic int	s_on;
	struct hog	hog;		/* bound to CPU 0 */
	_Atomic int	t_cpu;		/* T's CPU, plus one */
	_Atomic int	armed;		/* record CPU 1's next incoming */
	_Atomic(struct sc_thread *) incoming;
};

static void
ts_sleeper(void *arg)
{
	struct trysteal *ts = arg;

	(void)sc_sched_bind(1);
	atomic_store(&ts->s_on, 1);
	while (!atomic_load(&ts->armed))
		;		/* holds CPU 1 until the test is ready */
	sleep_until_go(&ts->s);
}

static void
ts_stolen(void *arg)
{
	struct trysteal *ts = arg;

	atomic_store(&ts->t_cpu, sc_curcpu() + 1);
}

/* The first thread that CPU 1 switches to once armed. */
static void
ts_hook(void *arg, enum sc_hook_point pt, struct sc_thread *td)
{
	struct trysteal *ts = arg;
	struct sc_thread *none = NULL;

	if (pt == SC_HOOK_SWITCH_INCOMING && sc_curcpu() == 1 &&
	    atomic_load(&ts->armed))
		atomic_compare_exchange_strong(&ts->incoming, &none, td);
}

/*
 * CPU 0 runs a hog and has T queued behind it (ULE's sched_pickcpu()
 * found both CPUs equally loaded and kept CPU 0); CPU 1 runs a thread
 * that then goes to sleep.  Its switch finds CPU 1's queue empty, and
 * ULE's tdq_trysteal() moves T from CPU 0's queue before choosing: the
 * thread CPU 1 switches to is T, not its idle thread.  Under 4BSD, T is
 * on the global queue, and CPU 1 takes it from there: the same thread
 * runs next, with no steal.
 */
static void
test_ule_trysteal(void **state)
{
	struct sc_machine_config cfg;
	struct trysteal ts = { .s = { .wmesg = "trysteal" },
	    .hog = { .cpu = 0 } };
	struct sc_thread *hog, *s, *t;
	uint64_t steals0;

	sc_machine_config_init(&cfg);
	hog = sc_test_spawn("hog", hog_bound, &ts.hog);
	SC_WAIT_FOR(atomic_load(&ts.hog.on) && sc_thread_oncpu(hog) == 0);
	s = sc_test_spawn("sleeper", ts_sleeper, &ts);
	SC_WAIT_FOR(atomic_load(&ts.s_on) && sc_thread_oncpu(s) == 1);
	t = sc_test_spawn("stolen", ts_stolen, &ts);
	assert_int_equal(sc_thread_state(t), SC_TDS_RUNQ);
	if (cfg.sched == SC_SCHED_ULE)
		assert_ptr_equal(atomic_load(&t->td_lock),
		    &tm->m_pcpu[0].pc_tdq_lock);
	steals0 = SC_COUNTER(tm, steals);
	sc_machine_set_hook(tm, ts_hook, &ts);
	atomic_store(&ts.armed, 1);
	SC_WAIT_FOR(atomic_load(&ts.t_cpu) != 0);
	sc_machine_set_hook(tm, NULL, NULL);
	assert_int_equal(atomic_load(&ts.t_cpu), 1 + 1);
	assert_ptr_equal(atomic_load(&ts.incoming), t);
	assert_int_equal(SC_COUNTER(tm, steals) - steals0,
	    cfg.sched == SC_SCHED_ULE ? 1 : 0);

	assert_int_equal(sc_thread_join(t), 0);
	atomic_store(&ts.hog.stop, 1);
	atomic_store(&ts.s.go, 1);
	sc_wakeup(&ts.s);
	assert_int_equal(sc_thread_join(s), 0);
	assert_int_equal(sc_thread_join(hog), 0);
}

/* ------------------------------------------------------------------------
 * ULE's tdq_idled(): an idle CPU takes an unbound thread from a busy one
 * ------------------------------------------------------------------------ */

struct idlesteal {
	_Atomic int	yield;		/* X may yield */
	_Atomic int	stop;		/* Y may return */
	_Atomic int	x_on;		/* X runs */
	_Atomic int	y_bound;	/* Y is bound to CPU 0 */
	_Atomic int	y_cpu;		/* Y's CPU once it runs, plus one */
	_Atomic int	x_before, x_after; /* X's CPU, plus one */
};

static void
is_x(void *arg)
{
	struct idlesteal *is = arg;

	/* On CPU 0, unbound: whichever idle CPU 4BSD woke for it first. */
	(void)sc_sched_bind(0);
	(void)sc_sched_bind(SC_NOCPU);
	atomic_store(&is->x_before, sc_curcpu() + 1);
	atomic_store(&is->x_on, 1);
	while (!atomic_load(&is->yield))
		;
	sc_yield();
	atomic_store(&is->x_after, sc_curcpu() + 1);
}

static void
is_y(void *arg)
{
	struct idlesteal *is = arg;

	atomic_store(&is->y_bound, 1);
	(void)sc_sched_bind(0);
	atomic_store(&is->y_cpu, sc_curcpu() + 1);
	while (!atomic_load(&is->stop))
		;
}

/*
 * X runs on CPU 0; Y binds itself to CPU 0 and waits on its queue; CPU 1
 * idles (it finds nothing it may take: Y is bound).  X yields: it goes on
 * CPU 0's queue behind Y, CPU 0 runs Y, and under ULE the idle CPU 1,
 * woken by the add, steals X (tdq_idled(), tdq_move() of the best
 * unbound thread): X resumes on CPU 1.  Under 4BSD, X goes on the global
 * queue and Y on CPU 0's own, equal in priority: sched_choose() gives
 * CPU 0 back to X, the global queue's thread, within the same switch.
 */
static void
test_ule_idle_steals(void **state)
{
	struct sc_machine_config cfg;
	struct idlesteal is = { 0 };
	struct sc_thread *x, *y;
	uint64_t steals0;

	sc_machine_config_init(&cfg);
	x = sc_test_spawn("x", is_x, &is);
	SC_WAIT_FOR(atomic_load(&is.x_on));
	assert_int_equal(atomic_load(&is.x_before), 0 + 1);
	y = sc_test_spawn("y", is_y, &is);
	SC_WAIT_FOR(atomic_load(&is.y_bound) &&
	    sc_thread_state(y) == SC_TDS_RUNQ);
	SC_WAIT_FOR(sc_thread_state(sc_machine_idlethread(tm, 1)) ==
	    SC_TDS_RUNNING);
	steals0 = SC_COUNTER(tm, steals);
	atomic_store(&is.yield, 1);
	SC_WAIT_FOR(atomic_load(&is.x_after) != 0);
	if (cfg.sched == SC_SCHED_ULE) {
		assert_int_equal(atomic_load(&is.x_after), 1 + 1);
		assert_int_equal(SC_COUNTER(tm, steals) - steals0, 1);
	} else {
		assert_int_equal(atomic_load(&is.x_after), 0 + 1);
		assert_int_equal(SC_COUNTER(tm, steals) - steals0, 0);
	}
	assert_int_equal(sc_thread_join(x), 0);
	SC_WAIT_FOR(atomic_load(&is.y_cpu) != 0);
	assert_int_equal(atomic_load(&is.y_cpu), 0 + 1);
	atomic_store(&is.stop, 1);
	assert_int_equal(sc_thread_join(y), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_priority_order,
		    sc_test_setup_1cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_set_get,
		    sc_test_setup_1cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_running_keeps_cpu,
		    sc_test_setup_1cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_4bsd_pcpu_vs_global,
		    sc_test_setup_1cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_ule_trysteal,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_ule_idle_steals,
		    sc_test_setup_2cpu, sc_test_teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
