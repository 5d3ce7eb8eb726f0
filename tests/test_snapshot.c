/*
 * sc_machine_snapshot() and the per-CPU request slots (stack_snapshot.c,
 * stack_machdep.c): the scenarios of tools/scenarios.c that show them,
 * then the API's contract through its failure paths.
 */
#include "sc_test.h"
#include "sc_test_bodies.h"
#include "sc_test_scn.h"

/* R's snapshot entry of tid. */
static const struct sc_kstack *
entry(int tid)
{
	size_t i;

	for (i = 0; i < R.nsnap && i < SCN_SNAP_MAX; i++)
		if (R.snap[i].tid == tid)
			return (&R.snap[i]);
	print_error("no entry for tid %d\n", tid);
	fail();
	return (NULL);
}

/*
 * Three CPUs: two spinners (in two processes), a sleeper, an idle CPU.
 * One round interrupts the three running CPUs; the rest are walked.
 */
static void
test_snapshot_one_round(void **state)
{
	const struct sc_kstack *k;
	char name[32];
	size_t i;

	(void)state;
	SKIP_UNDER_TSAN();
	run("snapshot");
	assert_int_equal(R.error, 0);
	/* 3 idle threads, spinner0 and the sleeper (pid 1), spinner1. */
	assert_int_equal(R.nsnap, 6);
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "idle: cpu%zu", i);
		assert_string_equal(R.snap[i].tdname, name);
	}
	/* Three processes, in pid order: idle, scenario, scenario2. */
	assert_int_equal(R.snap[0].pid, R.snap[2].pid);
	assert_true(R.snap[2].pid < R.snap[3].pid);
	assert_int_equal(R.snap[3].pid, R.snap[4].pid);
	assert_true(R.snap[4].pid < R.snap[5].pid);
	/* By pid, then tid: the sleeper (created last) before spinner1. */
	assert_int_equal(R.snap[3].tid, R.snap_tids[0]);
	assert_int_equal(R.snap[4].tid, R.sleeper_tid);
	assert_int_equal(R.snap[5].tid, R.snap_tids[1]);
	for (i = 0; i < 2; i++) {
		k = entry(R.snap_tids[i]);
		assert_int_equal(k->state, SC_KKST_STATE_STACKOK);
		ASSERT_SPIN_CHAIN(&k->stack);
	}
	k = entry(R.sleeper_tid);
	assert_int_equal(k->state, SC_KKST_STATE_STACKOK);
	SC_ASSERT_CHAIN(&k->stack, "sc_sleep", "spin_inner", "spin_outer");
	for (i = 0; i < 3; i++) {
		assert_int_equal(R.snap[i].state, SC_KKST_STATE_STACKOK);
		assert_true(R.snap[i].stack.depth > 0);
	}
	/* The two spinners' CPUs and the idle one, in one round. */
	assert_int_equal(R.cnt.snapshots, 1);
	assert_int_equal(R.cnt.snapshot_rounds, 1);
	assert_int_equal(R.cnt.snapshot_retries, 0);
	assert_int_equal(R.cnt.trace_answered, 3);
	assert_int_equal(R.cnt.timeouts, 0);
}

/* An answer that names another thread: the next round walks the pcb;
 * a thread that started running before its walk goes to the next round
 * too. */
static void
test_snapshot_retry_next_round(void **state)
{
	const struct sc_kstack *k;

	(void)state;
	run("snapshot-retry");
	assert_int_equal(R.error, 0);
	k = entry(R.snap_tids[0]);
	assert_int_equal(k->state, SC_KKST_STATE_STACKOK);
	SC_ASSERT_CHAIN(&k->stack, "sc_sleep", "spin_inner", "spin_outer");
	assert_int_equal(R.cnt.snapshot_retries, 1);
	assert_int_equal(R.cnt.retry_idle, 1);
	assert_int_equal(R.cnt.retry_offcpu, 1);
	/* Round 2: spinner0's pcb, and cpu0 again for its idle thread. */
	assert_int_equal(R.cnt.snapshot_rounds, 2);
	assert_int_equal(R.cnt.trace_answered, 3);
	assert_int_equal(R.snap[0].state, SC_KKST_STATE_STACKOK);
	assert_true(R.snap[0].stack.depth > 0);
#if !defined(SC_SANITIZER_THREAD)
	k = entry(R.snap_tids[1]);
	assert_int_equal(k->state, SC_KKST_STATE_STACKOK);
	ASSERT_SPIN_CHAIN(&k->stack);
#endif
}

/*
 * Two requesters, targets on two CPUs, with and without intr_lock: both
 * captures right; the second waited for the first (serial) or ended while
 * the first's request was open (per-CPU slots).
 */
static void
two_requesters(const char *name, bool serial)
{
	SKIP_UNDER_TSAN();
	run(name);
	assert_int_equal(R.error, 0);
	assert_int_equal(R.error2, 0);
	ASSERT_SPIN_CHAIN(&R.stack);
	assert_int_equal(R.overlapped, serial ? 0 : 1);
	assert_int_equal(R.cnt.capture_lock_waits, serial ? 1 : 0);
	assert_int_equal(R.cnt.captures_running, 2);
}

static void
test_capture_serial_waits(void **state)
{
	(void)state;
	two_requesters("capture-serial", true);
}

static void
test_capture_parallel_does_not_wait(void **state)
{
	(void)state;
	two_requesters("capture-parallel", false);
}

/* ------------------------------------------------------------------------
 * The contract, on the fixture's machine
 * ------------------------------------------------------------------------ */

/* A spinner bound to a CPU of its own, so it stays RUNNING there. */
struct bspin {
	struct spin	s;
	int		cpu;
};

SC_NOIPA static void
bspin_here(void *arg)
{
	struct bspin *b = arg;

	(void)sc_sched_bind(b->cpu);
	spin_polite(&b->s);
	SC_BARRIER();
}

SC_CHAIN(bspin_outer, bspin_here)

/* More threads than max: *n counts them all, only max are written. */
static void
test_snapshot_max(void **state)
{
	struct sc_kstack kk[4];
	struct bspin b = { .cpu = 1 };
	struct sc_thread *td;
	size_t n = 0;

	(void)state;
	td = sc_test_spawn("spinner", bspin_outer, &b);
	SC_WAIT_FOR(atomic_load(&b.s.spinning));
	memset(kk, 0xa5, sizeof(kk));
	/* Idle threads of 2 CPUs, then the spinner: 3; room for 2. */
	assert_int_equal(sc_machine_snapshot(tm, kk, 2, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(kk[0].tdname, "idle: cpu0");
	assert_string_equal(kk[1].tdname, "idle: cpu1");
	assert_int_equal(kk[2].tid, (int)0xa5a5a5a5);
	/* max 0: a count only. */
	assert_int_equal(sc_machine_snapshot(tm, NULL, 0, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(sc_machine_snapshot(tm, kk, 4, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(kk[2].tid, sc_thread_tid(td));
#if !defined(SC_SANITIZER_THREAD)
	assert_int_equal(kk[2].state, SC_KKST_STATE_STACKOK);
	SC_ASSERT_CHAIN(&kk[2].stack, "bspin_outer");
#endif
	atomic_store(&b.s.release, 1);
	assert_int_equal(sc_thread_join(td), 0);
}

/* Bad arguments, and callers that hold what a snapshot takes. */
static void
test_snapshot_bad_input(void **state)
{
	struct sc_kstack kk[4];
	size_t n = 7;

	(void)state;
	sc_set_panic_handler(sc_test_panic_record);
	/* Bad arguments are EINVAL, as documented, not a KASSERT (whose
	 * default handler aborted the program). */
	assert_int_equal(sc_machine_snapshot(NULL, kk, 4, &n), EINVAL);
	assert_int_equal(sc_machine_snapshot(tm, kk, 4, NULL), EINVAL);
	assert_int_equal(sc_machine_snapshot(tm, NULL, 3, &n), EINVAL);
	assert_int_equal(sc_machine_snapshot(tm, NULL, 0, NULL), EINVAL);
	assert_int_equal(sc_machine_snapshot_sz(tm, kk, 8, 4, &n), EINVAL);
	assert_int_equal(sc_test_panic_count(), 0);
	assert_int_equal(n, 7);
	/* With max 0, out may be NULL: the count alone. */
	assert_int_equal(sc_machine_snapshot(tm, NULL, 0, &n), 0);
	assert_int_equal(n, 2);
	n = 7;
	sc_proc_lock(tp);
	assert_int_equal(sc_machine_snapshot(tm, kk, 4, &n), EINVAL);
	sc_proc_unlock(tp);
	assert_int_equal(sc_test_panic_count(), 1);
	assert_non_null(strstr(sc_test_panic_msg(), "proc lock"));
	assert_int_equal(n, 7);
	/* Nothing was held or lost: a snapshot works afterwards. */
	assert_int_equal(sc_machine_snapshot(tm, kk, 4, &n), 0);
	assert_int_equal(n, 2);
}

/* A snapshot from a hook inside a capture would wait for the slot that
 * capture holds: a KASSERT, and the capture goes on untouched. */
static atomic_int hook_error = -1;

static void
snapshot_hook(void *arg, enum sc_hook_point point, struct sc_thread *td)
{
	static struct sc_kstack kk[4];
	size_t n;

	(void)arg;
	(void)td;
	if (point == SC_HOOK_SAVE_BEFORE_IPI)
		atomic_store(&hook_error, sc_machine_snapshot(tm, kk, 4, &n));
}

static void
test_snapshot_from_hook_asserts(void **state)
{
	struct bspin b = { .cpu = 1 };
	struct sc_thread *td;
	struct sc_stack st;
	int error;

	(void)state;
	SKIP_UNDER_TSAN();
	td = sc_test_spawn("spinner", bspin_outer, &b);
	SC_WAIT_FOR(atomic_load(&b.s.spinning) &&
	    sc_thread_oncpu(td) == 1);
	sc_set_panic_handler(sc_test_panic_record);
	sc_machine_set_hook(tm, snapshot_hook, NULL);
	error = sc_stack_save_td_locked(tp, td, &st);
	sc_machine_set_hook(tm, NULL, NULL);
	assert_int_equal(atomic_load(&hook_error), EINVAL);
	assert_int_equal(sc_test_panic_count(), 1);
	assert_non_null(strstr(sc_test_panic_msg(), "inside a capture"));
	assert_int_equal(error, 0);
	SC_ASSERT_CHAIN(&st, "bspin_outer");
	atomic_store(&b.s.release, 1);
	assert_int_equal(sc_thread_join(td), 0);
}

/* A snapshot from a simulated thread lists that thread, walked in place. */
struct selfsnap {
	struct sc_machine *m;
	struct sc_kstack kk[8];
	size_t		n;
	int		error;
	atomic_int	done;
};

SC_NOIPA static void
selfsnap_here(void *arg)
{
	struct selfsnap *s = arg;

	s->error = sc_machine_snapshot(s->m, s->kk, 8, &s->n);
	atomic_store(&s->done, 1);
	SC_BARRIER();
}

SC_CHAIN(selfsnap_outer, selfsnap_here)

static void
test_snapshot_from_simulated_thread(void **state)
{
	struct selfsnap s;
	struct sc_thread *td;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.m = tm;
	td = sc_test_spawn("snapper", selfsnap_outer, &s);
	SC_WAIT_FOR(atomic_load(&s.done));
	assert_int_equal(s.error, 0);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.kk[2].tid, sc_thread_tid(td));
	assert_int_equal(s.kk[2].state, SC_KKST_STATE_STACKOK);
	SC_ASSERT_CHAIN(&s.kk[2].stack, "selfsnap_here", "selfsnap_outer");
	assert_int_equal(sc_thread_join(td), 0);
}

/* A CPU that never takes its IPI: its thread is RUNNING, depth 0, at the
 * bound; the others are captured; the call returns. */
struct cli {
	struct hold	h;
	int		cpu;
	atomic_int	*after;		/* set once the other thread runs */
};

static void
cli_hold(void *arg)
{
	struct cli *c = arg;

	(void)sc_sched_bind(c->cpu);
	/* A thread queued on this CPU must have left before interrupts go
	 * off here for good: it could not move (deterministic mode put the
	 * spinner on cpu0's queue, and it never reached cpu1). */
	while (!atomic_load(c->after))
		sc_maybe_yield();
	sc_spinlock_enter();
	hold_cpu(&c->h);
	sc_spinlock_exit();
}

static void
test_snapshot_timeout(void **state)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	struct sc_proc *p;
	struct sc_thread *tc, *ts;
	struct bspin b = { .cpu = 1 };
	struct cli c = { .cpu = 0, .after = &b.s.spinning };
	struct sc_kstack kk[4];
	size_t n;

	(void)state;
	SKIP_UNDER_TSAN();
	sc_machine_config_init(&cfg);
	cfg.ncpu = 2;
	cfg.capture_timeout_ns = 100L * 1000 * 1000;
	assert_int_equal(sc_machine_create(&cfg, &m), 0);
	assert_int_equal(sc_proc_create(m, "p", &p), 0);
	assert_int_equal(sc_thread_create(p, "cli", cli_hold, &c, &tc), 0);
	assert_int_equal(sc_thread_create(p, "spin", bspin_outer, &b, &ts),
	    0);
	SC_WAIT_FOR(atomic_load(&c.h.holding) && atomic_load(&b.s.spinning));
	assert_int_equal(sc_machine_snapshot(m, kk, 4, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(kk[2].tid, sc_thread_tid(tc));
	assert_int_equal(kk[2].state, SC_KKST_STATE_RUNNING);
	assert_int_equal(kk[2].stack.depth, 0);
	assert_int_equal(kk[3].state, SC_KKST_STATE_STACKOK);
	SC_ASSERT_CHAIN(&kk[3].stack, "bspin_outer");
	assert_int_equal(SC_COUNTER(m, timeouts), 1);
	atomic_store(&c.h.release, 1);
	atomic_store(&b.s.release, 1);
	assert_int_equal(sc_thread_join(tc), 0);
	assert_int_equal(sc_thread_join(ts), 0);
	sc_machine_destroy(m);
}

/*
 * A proc lock held far beyond capture_timeout_ns, by a plain pthread or by
 * a simulated thread: the snapshot ends at its bound with ETIMEDOUT,
 * without that process, and every other thread listed as usual.  The
 * holder lets go only once the snapshot has returned, or at its own bound,
 * SC_TEST_TIMEOUT_MS: then the snapshot waited for it, and the test fails
 * instead of hanging.
 */
struct plock {
	struct sc_proc	*p;
	atomic_int	holding;
	atomic_int	release;	/* set once the snapshot returned */
	atomic_int	gave_up;	/* let go at its own bound */
	atomic_int	left;		/* the pthread makes no more calls */
};

static void
plock_hold(void *arg)
{
	struct plock *h = arg;
	struct sc_deadline dl;

	sc_proc_lock(h->p);
	atomic_store(&h->holding, 1);
	sc_test_deadline_start(&dl, SC_TEST_TIMEOUT_MS);
	while (!atomic_load(&h->release)) {
		if (sc_deadline_passed(&dl)) {
			atomic_store(&h->gave_up, 1);
			break;
		}
		/* A simulated holder stays RUNNING; a pthread naps. */
		if (sc_curthread() != NULL)
			sc_maybe_yield();
		else
			(void)sc_test_deadline_poll(&dl);
	}
	sc_proc_unlock(h->p);
}

static void *
plock_pthread(void *arg)
{
	struct plock *h = arg;

	plock_hold(h);
	atomic_store(&h->left, 1);
	return (NULL);
}

SC_CHAIN(plsleep_outer, sleep_until_go)

/* The snapshot, with its holder of p2's proc lock; serial or not. */
static void
snapshot_proc_lock_held(bool simulated, int serial)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	struct sc_proc *p1, *p2;
	struct sc_thread *ts, *th = NULL;
	struct sleeper sl = { .wmesg = "plsleep" };
	struct plock h;
	struct sc_kstack kk[8];
	pthread_t pt;
	size_t i, k, n = 0;
	int error;

	sc_machine_config_init(&cfg);
	cfg.ncpu = 2;
	cfg.capture_timeout_ns = 200L * 1000 * 1000;
	cfg.capture_serial = serial;
	assert_int_equal(sc_machine_create(&cfg, &m), 0);
	assert_int_equal(sc_proc_create(m, "p1", &p1), 0);
	assert_int_equal(sc_proc_create(m, "p2", &p2), 0);
	assert_int_equal(sc_thread_create(p1, "sleeper", plsleep_outer, &sl,
	    &ts), 0);
	WAIT_ASLEEP(ts);
	memset(&h, 0, sizeof(h));
	h.p = p2;
	if (simulated)
		assert_int_equal(sc_thread_create(p2, "holder", plock_hold,
		    &h, &th), 0);
	else
		assert_int_equal(pthread_create(&pt, NULL, plock_pthread, &h),
		    0);
	SC_WAIT_FOR(atomic_load(&h.holding));
	error = sc_machine_snapshot(m, kk, 8, &n);
	/* sc_proc_kstack() too: nothing listed, at the same bound. */
	assert_int_equal(sc_proc_kstack(p2, kk + 4, 4, &k), ETIMEDOUT);
	assert_int_equal(k, 0);
	/* Returned while the holder still holds: not at its bound. */
	assert_int_equal(atomic_load(&h.gave_up), 0);
	atomic_store(&h.release, 1);
	assert_int_equal(error, ETIMEDOUT);
	/* The idle threads (pid 0) and the sleeper (p1); nothing of p2. */
	assert_int_equal(n, 3);
	for (i = 0; i < n; i++)
		assert_int_not_equal(kk[i].pid, sc_proc_pid(p2));
	assert_int_equal(kk[2].tid, sc_thread_tid(ts));
	assert_int_equal(kk[2].state, SC_KKST_STATE_STACKOK);
	SC_ASSERT_CHAIN(&kk[2].stack, "sc_sleep", "plsleep_outer");
	assert_true(SC_COUNTER(m, timeouts) > 0);
	if (simulated)
		assert_int_equal(sc_thread_join(th), 0);
	else {
		/* Deterministic mode: the pthread's exit needs the run token,
		 * which a join would hold; wait at points first. */
		SC_WAIT_FOR(atomic_load(&h.left));
		assert_int_equal(pthread_join(pt, NULL), 0);
	}
	/* Every proc lock was let go: a snapshot lists p2 again. */
	assert_int_equal(sc_machine_snapshot(m, kk, 8, &n), 0);
	assert_int_equal(n, 3);
	atomic_store(&sl.go, 1);
	sc_wakeup(&sl);
	assert_int_equal(sc_thread_join(ts), 0);
	sc_machine_destroy(m);
}

static void
test_snapshot_proc_lock_held(void **state)
{
	int serial;

	(void)state;
	for (serial = 0; serial <= 1; serial++) {
		snapshot_proc_lock_held(false, serial);
		snapshot_proc_lock_held(true, serial);
	}
}

/*
 * One CPU: a simulated snapshot that finds a proc lock held by a thread
 * of its own CPU gives that thread the CPU while it waits (a bounded
 * wait must not block the CPU pthread: the holder could never let go),
 * and gets the lock once the holder lets go.
 */
struct handoff {
	struct sc_proc	*p;
	atomic_int	holding;
	atomic_int	waiting;	/* the snapshot is about to wait */
	struct selfsnap	snap;
};

static void
handoff_hold(void *arg)
{
	struct handoff *h = arg;

	sc_proc_lock(h->p);
	atomic_store(&h->holding, 1);
	while (!atomic_load(&h->waiting))
		sc_maybe_yield();
	sc_proc_unlock(h->p);
	while (!atomic_load(&h->snap.done))	/* listed, not exited */
		sc_maybe_yield();
}

static void
handoff_snap(void *arg)
{
	struct handoff *h = arg;

	while (!atomic_load(&h->holding))
		sc_maybe_yield();
	atomic_store(&h->waiting, 1);
	selfsnap_here(&h->snap);
}

static void
test_snapshot_waits_yielding(void **state)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	struct sc_proc *p;
	struct sc_thread *th, *ts;
	struct handoff h;

	(void)state;
	sc_machine_config_init(&cfg);
	cfg.ncpu = 1;
	cfg.capture_timeout_ns = 1000L * 1000 * 1000;
	assert_int_equal(sc_machine_create(&cfg, &m), 0);
	assert_int_equal(sc_proc_create(m, "p", &p), 0);
	memset(&h, 0, sizeof(h));
	h.p = p;
	h.snap.m = m;
	assert_int_equal(sc_thread_create(p, "holder", handoff_hold, &h, &th),
	    0);
	assert_int_equal(sc_thread_create(p, "snapper", handoff_snap, &h,
	    &ts), 0);
	SC_WAIT_FOR(atomic_load(&h.snap.done));
	assert_int_equal(h.snap.error, 0);
	assert_int_equal(h.snap.n, 3);
	assert_int_equal(sc_thread_join(th), 0);
	assert_int_equal(sc_thread_join(ts), 0);
	sc_machine_destroy(m);
}

/*
 * capture_serial: the kernel's way, one capture after another; the same
 * listing, no round.  And the element size of stackcap 0.1's struct.
 */
static void
test_snapshot_serial_and_old_size(void **state)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	struct sc_proc *p;
	struct sc_thread *td;
	struct bspin b = { .cpu = 1 };
	struct sc_kstack kk[4], *k;
	char buf[4 * sizeof(struct sc_kstack)];
	size_t n, v0 = offsetof(struct sc_kstack, pid);
	int serial;

	(void)state;
	SKIP_UNDER_TSAN();
	for (serial = 0; serial <= 1; serial++) {
		sc_machine_config_init(&cfg);
		cfg.ncpu = 2;
		cfg.capture_serial = serial;
		assert_int_equal(sc_machine_create(&cfg, &m), 0);
		assert_int_equal(sc_proc_create(m, "p", &p), 0);
		memset(&b.s, 0, sizeof(b.s));
		assert_int_equal(sc_thread_create(p, "spin", bspin_outer, &b,
		    &td), 0);
		SC_WAIT_FOR(atomic_load(&b.s.spinning));
		assert_int_equal(sc_machine_snapshot(m, kk, 4, &n), 0);
		assert_int_equal(n, 3);
		assert_int_equal(kk[2].tid, sc_thread_tid(td));
		assert_int_equal(kk[2].state, SC_KKST_STATE_STACKOK);
		SC_ASSERT_CHAIN(&kk[2].stack, "bspin_outer");
		assert_int_equal(SC_COUNTER(m, snapshot_rounds) > 0, !serial);
		/* Elements v0 bytes apart: each where an old caller has it. */
		memset(buf, 0x5a, sizeof(buf));
		assert_int_equal(sc_machine_snapshot_sz(m,
		    (struct sc_kstack *)(void *)buf, v0, 4, &n), 0);
		assert_int_equal(n, 3);
		k = (struct sc_kstack *)(void *)(buf + 2 * v0);
		assert_int_equal(k->tid, sc_thread_tid(td));
		assert_int_equal(k->state, SC_KKST_STATE_STACKOK);
		/* Nothing written past the third element. */
		assert_int_equal(buf[3 * v0], 0x5a);
		atomic_store(&b.s.release, 1);
		assert_int_equal(sc_thread_join(td), 0);
		sc_machine_destroy(m);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_snapshot_one_round),
		cmocka_unit_test(test_snapshot_retry_next_round),
		cmocka_unit_test(test_capture_serial_waits),
		cmocka_unit_test(test_capture_parallel_does_not_wait),
		cmocka_unit_test_setup_teardown(test_snapshot_max,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_bad_input,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(
		    test_snapshot_from_simulated_thread, sc_test_setup_2cpu,
		    sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_from_hook_asserts,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test(test_snapshot_timeout),
		cmocka_unit_test(test_snapshot_proc_lock_held),
		cmocka_unit_test(test_snapshot_waits_yielding),
		cmocka_unit_test(test_snapshot_serial_and_old_size),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
