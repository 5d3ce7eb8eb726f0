/*
 * The clock (cfg.hz): ticks on a CPU that runs a thread, none without a
 * clock; time slices that preempt a thread which never calls the library;
 * the stack of a preempted thread through the clock interrupt's frame;
 * critical sections that defer the preemption; the misuse that is a
 * KASSERT or EINVAL.
 *
 * Kernel counterparts: hardclock() in sys/kern/kern_clock.c,
 * sched_clock() in sys/kern/sched_ule.c and sys/kern/sched_4bsd.c,
 * critical_enter()/critical_exit() in sys/kern/kern_switch.c.
 *
 * Simulated threads never call CMocka; the test thread asserts.  No
 * assertion on timings: every wait is a bounded wait for a condition.
 */
#include "sc_test.h"
#include "scn_target.h"

/* A machine of ncpu CPUs with the clock at hz, in tm with a process tp. */
static void
clock_machine(int ncpu, int hz)
{
	struct sc_machine_config cfg;

	sc_machine_config_init(&cfg);
	cfg.ncpu = ncpu;
	cfg.hz = hz;
	assert_int_equal(sc_machine_create(&cfg, &tm), 0);
	assert_int_equal(sc_proc_create(tm, "test", &tp), 0);
	sc_test_panic_reset();
}

static int
setup_none(void **state)
{
	(void)state;
	return (0);
}

/* ------------------------------------------------------------------------
 * Thread bodies
 * ------------------------------------------------------------------------ */

/* Spins in spin_outer -> spin_inner until released, never calling the
 * library; another thread's flag or the test releases it. */
struct spinner {
	atomic_int	running;	/* set once spinning */
	atomic_int	release;
	atomic_int	done;
	atomic_int	critical;	/* spin inside sc_critical_enter() */
	atomic_int	exit_critical;	/* leave it (then spin on) */
};

SC_NOIPA static void
spin_inner(struct spinner *s)
{
	atomic_store(&s->running, 1);
	while (!atomic_load_explicit(&s->release, memory_order_relaxed)) {
		if (atomic_load_explicit(&s->exit_critical,
		    memory_order_relaxed) && atomic_exchange(&s->critical, 0))
			sc_critical_exit();
		__builtin_ia32_pause();
	}
	SC_BARRIER();
}

SC_NOIPA static void
spin_outer(void *arg)
{
	struct spinner *s = arg;

	if (atomic_load(&s->critical))
		sc_critical_enter();
	spin_inner(s);
	SC_BARRIER();
	atomic_store(&s->done, 1);
}

/* Releases the spinner it points to: it can run only if the spinner
 * leaves its CPU. */
struct releaser {
	struct spinner	*spinner;
	atomic_int	ran;
};

static void
release_spinner(void *arg)
{
	struct releaser *r = arg;

	atomic_store(&r->ran, 1);
	atomic_store(&r->spinner->release, 1);
}

/* ------------------------------------------------------------------------
 * Tests
 * ------------------------------------------------------------------------ */

/* A CPU that runs a thread takes ticks (hardclock); with hz = 0 none. */
static void
test_ticks_counted(void **state)
{
	struct spinner s = { 0 };
	struct sc_thread *td;

	(void)state;
	clock_machine(1, 1000);
	td = sc_test_spawn("spinner", spin_outer, &s);
	SC_WAIT_FOR(atomic_load(&s.running));
	SC_WAIT_FOR(SC_COUNTER(tm, clock_intrs) >= 10);
	atomic_store(&s.release, 1);
	assert_int_equal(sc_thread_join(td), 0);
	sc_test_teardown(NULL);

	memset(&s, 0, sizeof(s));
	clock_machine(1, 0);
	td = sc_test_spawn("spinner", spin_outer, &s);
	SC_WAIT_FOR(atomic_load(&s.running));
	/* Time for ticks, if there were a clock: 20 ms is 20 at 1000 Hz. */
	(void)nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 },
	    NULL);
	assert_int_equal(SC_COUNTER(tm, clock_intrs), 0);
	assert_int_equal(SC_COUNTER(tm, preempted), 0);
	atomic_store(&s.release, 1);
	assert_int_equal(sc_thread_join(td), 0);
	sc_test_teardown(NULL);
}

/*
 * One CPU, clock on: a thread running fn (named name) spins without a
 * call until a second thread of the same CPU releases it, which only a
 * preemption lets run.
 */
static void
spinner_released(const char *name, void (*fn)(void *))
{
	struct spinner s = { 0 };
	struct releaser r = { .spinner = &s };
	struct sc_thread *td, *td2;

	clock_machine(1, 1000);
	td = sc_test_spawn(name, fn, &s);
	SC_WAIT_FOR(atomic_load(&s.running));
	td2 = sc_test_spawn("releaser", release_spinner, &r);
	SC_WAIT_FOR(atomic_load(&s.done));
	assert_true(atomic_load(&r.ran));
	assert_true(SC_COUNTER(tm, preempted) >= 1);
	assert_int_equal(sc_thread_join(td), 0);
	assert_int_equal(sc_thread_join(td2), 0);
	sc_test_teardown(NULL);
}

/*
 * One CPU, two threads: the first spins until the second runs, and never
 * calls the library.  Without a clock that would never end (the bounded
 * wait would fail); with one, the first thread's slice ends with the
 * second waiting, the tick preempts it, and the second releases it.
 */
static void
test_spinner_preempted(void **state)
{
	(void)state;
	spinner_released("spinner", spin_outer);
}

/*
 * The stack of a preempted thread, captured through its pcb, shows the
 * interrupt: mi_switch ... sc__sched_preempt, sc__timerint (the clock
 * interrupt's frame), then the interrupted chain spin_inner, spin_outer.
 * Two spinners take turns on one CPU, so each is off its CPU half the
 * time, preempted.
 */
static void
test_preempted_stack(void **state)
{
	struct spinner s1 = { 0 }, s2 = { 0 };
	struct sc_thread *td1, *td2;
	struct sc_stack st;
	struct sc_deadline dl;
	bool seen = false;
	int error;

	(void)state;
	clock_machine(1, 1000);
	td1 = sc_test_spawn("spinner1", spin_outer, &s1);
	SC_WAIT_FOR(atomic_load(&s1.running));
	td2 = sc_test_spawn("spinner2", spin_outer, &s2);
	sc_test_deadline_start(&dl, SC_TEST_TIMEOUT_MS);
	while (!seen) {
		assert_false(sc_test_deadline_poll(&dl));
		sc_proc_lock(tp);
		sc_thread_lock(td1);
		error = sc_stack_save_td(&st, td1);
		sc_thread_unlock(td1);
		sc_proc_unlock(tp);
		if (error != 0 || sc_test_stack_find(&st, 0,
		    "sc__timerint") < 0)
			continue;
		SC_ASSERT_CHAIN(&st, "sc__sched_preempt", "sc__timerint",
		    "spin_inner", "spin_outer");
		seen = true;
	}
	atomic_store(&s1.release, 1);
	atomic_store(&s2.release, 1);
	assert_int_equal(sc_thread_join(td1), 0);
	assert_int_equal(sc_thread_join(td2), 0);
	sc_test_teardown(NULL);
}

/*
 * A thread in a critical section is not preempted, however many slices
 * it spends with another thread waiting; the preemption it owes is taken
 * at sc_critical_exit().
 */
static void
test_critical_defers(void **state)
{
	struct spinner s = { 0 };
	struct releaser r = { .spinner = &s };
	struct sc_thread *td, *td2;
	int slice = 1000 / 10;

	(void)state;
	clock_machine(1, 1000);
	atomic_store(&s.critical, 1);
	td = sc_test_spawn("critical", spin_outer, &s);
	SC_WAIT_FOR(atomic_load(&s.running));
	td2 = sc_test_spawn("releaser", release_spinner, &r);
	/* Three slices spent with the releaser waiting. */
	SC_WAIT_FOR(SC_COUNTER(tm, clock_intrs) >= (uint64_t)(3 * slice));
	assert_int_equal(SC_COUNTER(tm, preempted), 0);
	assert_false(atomic_load(&r.ran));
	atomic_store(&s.exit_critical, 1);
	SC_WAIT_FOR(atomic_load(&s.done));
	assert_true(atomic_load(&r.ran));
	assert_true(SC_COUNTER(tm, preempted) >= 1);
	assert_int_equal(sc_thread_join(td), 0);
	assert_int_equal(sc_thread_join(td2), 0);
	sc_test_teardown(NULL);
}

/* Spins in user mode (sc_user_call()) until released. */
SC_NOIPA static void
user_spin(void *arg)
{
	struct spinner *s = arg;

	atomic_store(&s->running, 1);
	while (!atomic_load_explicit(&s->release, memory_order_relaxed))
		__builtin_ia32_pause();
	SC_BARRIER();
}

SC_NOIPA static void
user_spinner(void *arg)
{
	struct spinner *s = arg;

	sc_user_call(user_spin, s);
	SC_BARRIER();
	atomic_store(&s->done, 1);
}

/*
 * A thread that spins in user mode is preempted too, on its kernel stack
 * (a trap from user mode): the other thread of its CPU runs and releases
 * it, and its stack, captured meanwhile, has the interrupt's frame on the
 * kernel stack.
 */
static void
test_user_mode_preempted(void **state)
{
	(void)state;
	spinner_released("user", user_spinner);
}

/* sc_critical_exit() without sc_critical_enter(): KASSERT. */
static void
critical_exit_alone(void *arg)
{
	atomic_int *done = arg;

	sc_critical_exit();
	atomic_store(done, 1);		/* never: the thread is parked */
}

static void
test_critical_exit_without_enter(void **state)
{
	atomic_int done = 0;

	(void)state;
	clock_machine(1, 1000);
	sc_set_panic_handler(sc_test_panic_record);
	(void)sc_test_spawn("exit-alone", critical_exit_alone, &done);
	SC_WAIT_FOR(sc_test_panic_count() > 0);
	assert_non_null(strstr(sc_test_panic_msg(),
	    "sc_critical_exit without sc_critical_enter"));
	assert_int_equal(atomic_load(&done), 0);

	/* And on a plain pthread, outside any simulated thread. */
	sc_test_panic_reset();
	sc_critical_enter();
	assert_int_equal(sc_test_panic_count(), 1);
	assert_non_null(strstr(sc_test_panic_msg(), "outside a simulated "
	    "thread"));
	sc_critical_exit();
	assert_int_equal(sc_test_panic_count(), 2);
	sc_test_teardown(NULL);
}

/* A switch inside a critical section: KASSERT, as FreeBSD's
 * mi_switch(); the thread is parked, and the machine's other threads are
 * preempted as before. */
static void
yield_in_critical(void *arg)
{
	atomic_int *done = arg;

	sc_critical_enter();
	sc_yield();
	atomic_store(done, 1);		/* never: the thread is parked */
}

static void
test_switch_in_critical(void **state)
{
	struct spinner s = { 0 };
	struct releaser r = { .spinner = &s };
	struct sc_thread *td, *td2;
	atomic_int done = 0;

	(void)state;
	clock_machine(1, 1000);
	sc_set_panic_handler(sc_test_panic_record);
	td = sc_test_spawn("yielder", yield_in_critical, &done);
	SC_WAIT_FOR(sc_test_panic_count() > 0);
	assert_non_null(strstr(sc_test_panic_msg(), "critical section"));
	assert_int_equal(atomic_load(&done), 0);
	assert_int_equal(sc_thread_join(td), EINVAL);	/* parked */
	/* The next threads are preempted as usual. */
	td = sc_test_spawn("spinner", spin_outer, &s);
	SC_WAIT_FOR(atomic_load(&s.running));
	td2 = sc_test_spawn("releaser", release_spinner, &r);
	SC_WAIT_FOR(atomic_load(&s.done));
	assert_int_equal(sc_thread_join(td), 0);
	assert_int_equal(sc_thread_join(td2), 0);
	sc_test_teardown(NULL);
}

/* hz below 0 or above SC_HZ_MAX: EINVAL, with the reason. */
static void
test_hz_range(void **state)
{
	static const int bad[] = { -1, SC_HZ_MAX + 1, 1 << 30 };
	struct sc_machine_config cfg;
	struct sc_machine *m;
	size_t i;

	(void)state;
	sc_machine_config_init(&cfg);
	assert_int_equal(cfg.hz, 1000);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cfg.hz = bad[i];
		m = (struct sc_machine *)1;
		assert_int_equal(sc_machine_create(&cfg, &m), EINVAL);
		assert_null(m);
		assert_non_null(strstr(sc_machine_config_error(), "hz"));
	}
	cfg.hz = SC_HZ_MAX;
	assert_int_equal(sc_machine_create(&cfg, &m), 0);
	sc_machine_destroy(m);
}

/*
 * Scenario "preempted" (stackcap-demo --scenario preempted): the target
 * preempted by a tick in the middle of its chain, captured through its
 * pcb with the interrupt's frame.
 */
static void
test_scenario_preempted(void **state)
{
	struct scn_result res;

	(void)state;
	assert_int_equal(scn_run(scn_find("preempted"), 0, NULL, NULL, &res),
	    0);
	assert_true(res.raced);
	assert_int_equal(res.error, 0);
	SC_ASSERT_CHAIN(&res.stack, "sc__mi_switch", "sc__sched_preempt",
	    "sc__timerint", "spin_inner", "spin_outer", "target_main");
	assert_true(res.cnt.preempted >= 1);
	assert_int_equal(res.cnt.captures_running, 0);
}

/*
 * Scenario "preempt-in-window": the target preempted after the requester
 * read its td_oncpu and before the IPI; the handler answers with the
 * thread that took the CPU, the requester retries and walks the
 * preempted target's pcb.
 */
static void
test_scenario_preempt_in_window(void **state)
{
	struct scn_result res;

	(void)state;
	assert_int_equal(scn_run(scn_find("preempt-in-window"), 0, NULL,
	    NULL, &res), 0);
	assert_true(res.raced);
	assert_int_equal(res.error, 0);
	SC_ASSERT_CHAIN(&res.stack, "sc__mi_switch", "sc__sched_preempt",
	    "sc__timerint", "spin_inner", "spin_outer", "target_main");
	assert_true(res.cnt.retry_other >= 1);
	assert_true(res.cnt.trace_answered >= 1);
	assert_int_equal(res.cnt.captures_running, 0);
}

/*
 * A scenario whose bounded wait expires returns ETIMEDOUT with its
 * threads gone: its target and hog point into its frame, which dies as
 * it returns.  Without a clock (hz 0) the spinning target never leaves
 * its CPU, so the hog never runs and the wait (lowered to 200 ms) expires
 * in both clock scenarios.  (Before the fix, the target, and in
 * "preempted" the hog, were still running after the return: the hog
 * wrote into the caller's next frame.)
 */
static void
test_scenario_expired_stops_threads(void **state)
{
	int (*run[])(struct sc_proc *, struct scn_result *) = {
		scn_preempted, scn_preempt_in_window,
	};
	struct sc_thread *tds[4];
	struct scn_result res;
	uint64_t bound;
	size_t i, n;

	(void)state;
	bound = scn_bound_ns;
	scn_bound_ns = 200ULL * 1000 * 1000;
	for (i = 0; i < sizeof(run) / sizeof(run[0]); i++) {
		clock_machine(1, 0);
		memset(&res, 0, sizeof(res));
		assert_int_equal(run[i](tp, &res), ETIMEDOUT);
		sc_proc_threads(tp, tds, 4, &n);
		assert_int_equal(n, 0);
		sc_test_teardown(NULL);
	}
	scn_bound_ns = bound;
}

/* ------------------------------------------------------------------------
 * sched_add()'s preemption: a better thread made runnable takes the CPU
 * ------------------------------------------------------------------------ */

/*
 * A thread bound to CPU 0 at priority pri that sleeps until go, then
 * records that it ran.  Bound, so that 4BSD queues it on CPU 0's own
 * queue (a plain pthread that wakes a thread of the global queue is on
 * no CPU that could be preempted for it: only kick_other_cpu() sends).
 */
struct better {
	int		pri;
	atomic_int	go;
	atomic_int	ran;
};

static void
better_body(void *arg)
{
	struct better *b = arg;

	(void)sc_sched_bind(0);
	(void)sc_thread_set_priority(sc_curthread(), b->pri);
	while (!atomic_load(&b->go))
		sc_sleep(&b->go, "better");
	atomic_store(&b->ran, 1);
}

/* Make b's thread runnable: from any thread. */
static void
better_wake(struct better *b)
{
	atomic_store(&b->go, 1);
	sc_wakeup(&b->go);
}

/* One CPU, no clock; b's thread asleep on it, at b->pri. */
static struct sc_thread *
better_setup(struct better *b)
{
	struct sc_thread *td;

	clock_machine(1, 0);
	td = sc_test_spawn("better", better_body, b);
	SC_WAIT_STATE(td, SC_TDS_INHIBITED, SC_TDI_SLEEPING);
	assert_int_equal(sc_thread_priority(td), b->pri);
	return (td);
}

/*
 * What the spinner's CPU shows when a thread that is not better was made
 * runnable for it: under hz = 0 nothing takes the CPU from the spinner,
 * so the thread stays queued and nothing was preempted (a bounded wait
 * gives a preemption time to happen; none may).  Then the spinner ends
 * and the thread runs.
 */
static void
better_not_preempted(struct spinner *s, struct sc_thread *td,
    struct better *b)
{
	SC_WAIT_STATE(td, SC_TDS_RUNQ, 0);
	(void)nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 },
	    NULL);
	assert_int_equal(sc_thread_state(td), SC_TDS_RUNQ);
	assert_int_equal(atomic_load(&b->ran), 0);
	assert_int_equal(SC_COUNTER(tm, preempted), 0);
	atomic_store(&s->release, 1);
	SC_WAIT_FOR(atomic_load(&b->ran));
}

/*
 * From a plain pthread, which is no CPU (ULE's tdq_notify(), 4BSD's
 * kick_other_cpu()): an interrupt-priority thread made runnable for the
 * spinner's CPU preempts it by IPI_PREEMPT, and runs while the spinner
 * is still spinning; a thread at the spinner's own timesharing priority
 * does not: it waits, and no IPI is sent for it.
 */
static void
test_add_preempts_remote(void **state)
{
	struct better b = { .pri = SC_PI_DULL };
	struct spinner s = { 0 };
	struct sc_thread *td, *sp;
	uint64_t ipis;

	(void)state;
	td = better_setup(&b);
	sp = sc_test_spawn("spinner", spin_outer, &s);
	SC_WAIT_FOR(atomic_load(&s.running));
	better_wake(&b);
	SC_WAIT_FOR(atomic_load(&b.ran));
	assert_int_equal(atomic_load(&s.done), 0);
	assert_true(SC_COUNTER(tm, preempted) >= 1);
	atomic_store(&s.release, 1);
	assert_int_equal(sc_thread_join(td), 0);
	assert_int_equal(sc_thread_join(sp), 0);
	sc_test_teardown(NULL);

	memset(&b, 0, sizeof(b));
	memset(&s, 0, sizeof(s));
	b.pri = SC_PRI_MIN_TIMESHARE;
	td = better_setup(&b);
	sp = sc_test_spawn("spinner", spin_outer, &s);
	SC_WAIT_FOR(atomic_load(&s.running));
	ipis = SC_COUNTER(tm, ipis_sent);
	better_wake(&b);
	/* sched_add() decides at once: no IPI_PREEMPT went out. */
	assert_int_equal(SC_COUNTER(tm, ipis_sent), ipis);
	better_not_preempted(&s, td, &b);
	assert_int_equal(sc_thread_join(td), 0);
	assert_int_equal(sc_thread_join(sp), 0);
	sc_test_teardown(NULL);
}

/* A thread that makes b's thread runnable, then spins on its CPU. */
struct waker {
	struct better	*b;
	struct spinner	s;
};

static void
wake_then_spin(void *arg)
{
	struct waker *w = arg;

	better_wake(w->b);
	spin_outer(&w->s);
}

/*
 * On the caller's own CPU (ULE's sched_setpreempt(), 4BSD's
 * maybe_preempt()): a thread that wakes an interrupt-priority thread
 * bound to its CPU owes the preemption and takes it as its wakeup
 * releases the sleep queue's lock, before it spins; at an equal priority
 * it keeps its CPU and spins.
 */
static void
test_add_preempts_local(void **state)
{
	struct better b = { .pri = SC_PI_DULL };
	struct waker w = { .b = &b };
	struct sc_thread *td, *wt;

	(void)state;
	td = better_setup(&b);
	wt = sc_test_spawn("waker", wake_then_spin, &w);
	SC_WAIT_FOR(atomic_load(&b.ran));
	assert_true(SC_COUNTER(tm, preempted) >= 1);
	SC_WAIT_FOR(atomic_load(&w.s.running));
	atomic_store(&w.s.release, 1);
	assert_int_equal(sc_thread_join(td), 0);
	assert_int_equal(sc_thread_join(wt), 0);
	sc_test_teardown(NULL);

	memset(&b, 0, sizeof(b));
	memset(&w.s, 0, sizeof(w.s));
	b.pri = SC_PRI_MIN_TIMESHARE;
	td = better_setup(&b);
	wt = sc_test_spawn("waker", wake_then_spin, &w);
	SC_WAIT_FOR(atomic_load(&w.s.running));
	better_not_preempted(&w.s, td, &b);
	assert_int_equal(sc_thread_join(td), 0);
	assert_int_equal(sc_thread_join(wt), 0);
	sc_test_teardown(NULL);
}

/*
 * The AVX state of a thread preempted by IPI_PREEMPT without a clock:
 * the spinner holds a pattern in all 256 bits of %ymm0 while it spins,
 * the interrupt-priority thread that preempts it writes another into
 * %ymm0, and the spinner reads its own back.  sc__timerint saves what
 * XSAVE covers (kern_clock.c), which it knows only once a CPU learnt
 * it, once per process: without a clock too (main() runs this test
 * before any machine with a clock).  On a host without AVX there is
 * nothing to check.
 */
struct avx_case {
	volatile int	running;
	volatile int	release;
	uint64_t	out[4];
};

#define	AVX_MINE	0x5a5a5a5a12345678ULL
#define	AVX_OTHER	0xa5a5a5a587654321ULL

SC_NOIPA static void
avx_spin(void *arg)
{
	struct avx_case *a = arg;
	uint64_t pat = AVX_MINE;

	__asm__ volatile(
	    "vbroadcastsd %[pat], %%ymm0\n\t"
	    "movl $1, %[running]\n"
	    "1:\tpause\n\t"
	    "cmpl $0, %[release]\n\t"
	    "je 1b\n\t"
	    "vmovdqu %%ymm0, %[out]\n\t"
	    "vzeroupper"
	    : [out] "=m" (a->out), [running] "=m" (a->running)
	    : [pat] "m" (pat), [release] "m" (a->release)
	    : "xmm0", "memory");
}

static void
avx_clobber(void *arg)
{
	struct better *b = arg;
	uint64_t pat = AVX_OTHER;

	better_body(b);
	__asm__ volatile("vbroadcastsd %0, %%ymm0" : : "m" (pat) : "xmm0");
}

static void
test_add_preempt_keeps_avx(void **state)
{
	struct better b = { .pri = SC_PI_DULL };
	struct avx_case a = { 0 };
	struct sc_thread *td, *sp;
	int i;

	(void)state;
	if (!__builtin_cpu_supports("avx"))
		skip();
	clock_machine(1, 0);
	td = sc_test_spawn("better", avx_clobber, &b);
	SC_WAIT_STATE(td, SC_TDS_INHIBITED, SC_TDI_SLEEPING);
	sp = sc_test_spawn("avx", avx_spin, &a);
	SC_WAIT_FOR(a.running);
	better_wake(&b);
	SC_WAIT_FOR(atomic_load(&b.ran));
	assert_true(SC_COUNTER(tm, preempted) >= 1);
	a.release = 1;
	assert_int_equal(sc_thread_join(sp), 0);
	assert_int_equal(sc_thread_join(td), 0);
	for (i = 0; i < 4; i++)
		assert_true(a.out[i] == AVX_MINE);
	sc_test_teardown(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		/* First: the FPU layout is learnt once per process. */
		cmocka_unit_test_setup_teardown(test_add_preempt_keeps_avx,
		    setup_none, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_ticks_counted,
		    setup_none, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_spinner_preempted,
		    setup_none, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_preempted_stack,
		    setup_none, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_user_mode_preempted,
		    setup_none, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_critical_defers,
		    setup_none, sc_test_teardown),
		cmocka_unit_test_setup_teardown(
		    test_critical_exit_without_enter, setup_none,
		    sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_switch_in_critical,
		    setup_none, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_add_preempts_remote,
		    setup_none, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_add_preempts_local,
		    setup_none, sc_test_teardown),
		cmocka_unit_test(test_hz_range),
		cmocka_unit_test(test_scenario_preempted),
		cmocka_unit_test(test_scenario_preempt_in_window),
		cmocka_unit_test(test_scenario_expired_stops_threads),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
