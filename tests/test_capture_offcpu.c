/*
 * sc_stack_save_td() of threads that are not running (the pcb walk),
 * its KASSERTs, ESRCH, and sc_proc_kstack() (kern.proc.kstack); one basic
 * capture of a running thread (the IPI path).
 *
 * Kernel counterparts: stack_save_td() in sys/x86/x86/stack_machdep.c
 * (steps 1-3 of docs/protocol.md), sysctl_kern_proc_kstack() in
 * sys/kern/kern_proc.c.
 *
 * Chains use SC_NOIPA and a compiler barrier after each call, so
 * every link keeps its frame and symbol.  Simulated threads never call
 * CMocka; the test thread asserts.
 */
#include <errno.h>

#include "sc_test.h"



/* Capture td the way the API wants it: with its thread lock held. */
static int
capture(struct sc_stack *st, struct sc_thread *td)
{
	int error;

	sc_thread_lock(td);
	error = sc_stack_save_td(st, td);
	assert_true(sc_thread_lock_owned(td));	/* returned locked */
	sc_thread_unlock(td);
	return (error);
}

/* A stack full of garbage, to see that a capture empties it. */
static void
stack_garbage(struct sc_stack *st)
{
	memset(st, 0xa5, sizeof(*st));
	st->depth = 7;
}

/* ------------------------------------------------------------------------
 * Thread bodies
 * ------------------------------------------------------------------------ */

/* Sleeps at the bottom of f1 -> f2 -> f3 -> sc_sleep until go. */
struct sleeper {
	atomic_int	go;
	atomic_int	done;
};

SC_NOIPA static void
f3(void *arg)
{
	struct sleeper *s = arg;

	while (!atomic_load(&s->go)) {
		sc_sleep(s, "f3wait");
		SC_BARRIER();
	}
	atomic_store(&s->done, 1);
	SC_BARRIER();
}
SC_CHAIN(f2, f3)
SC_CHAIN(f1, f2)

/* Asleep and off its CPU. */
#define WAIT_ASLEEP(td)							\
	SC_WAIT_FOR(sc_thread_state(td) == SC_TDS_INHIBITED &&		\
	    (sc_thread_inhibitors(td) & SC_TDI_SLEEPING) != 0 &&	\
	    sc_thread_oncpu(td) == SC_NOCPU)

static void
wake_and_join(struct sleeper *s, struct sc_thread *td)
{
	atomic_store(&s->go, 1);
	sc_wakeup(s);
	assert_int_equal(sc_thread_join(td), 0);
	assert_int_equal(atomic_load(&s->done), 1);
}

/*
 * A running thread: spin1 -> spin2 -> spin3 -> spin_loop, which loops on a
 * flag calling sc_maybe_yield().  The loop is one link below spin3, so an
 * IPI that lands anywhere in it (or deeper) finds spin3's frame: the
 * interrupted %rip itself is not recorded, as in the kernel.
 */
struct spinner {
	atomic_int	spinning;
	atomic_int	stop;
};

SC_NOIPA static void
spin_loop(void *arg)
{
	struct spinner *sp = arg;

	while (!atomic_load(&sp->stop)) {
		atomic_store(&sp->spinning, 1);
		sc_maybe_yield();
	}
	SC_BARRIER();
}
SC_CHAIN(spin3, spin_loop)
SC_CHAIN(spin2, spin3)
SC_CHAIN(spin1, spin2)

static void
nop(void *arg)
{
	(void)arg;
}

/* ------------------------------------------------------------------------
 * Sleeping thread: the pcb walk
 * ------------------------------------------------------------------------ */

static void
test_sleeper_chain(void **state)
{
	struct sleeper s = { 0 };
	struct sc_counters c0, c1;
	struct sc_stack st;
	struct sc_thread *td;

	td = sc_test_spawn("sleeper", f1, &s);
	WAIT_ASLEEP(td);
	sc_machine_counters(tm, &c0);
	stack_garbage(&st);
	assert_int_equal(capture(&st, td), 0);
	sc_machine_counters(tm, &c1);
	assert_true(st.depth > 0);
	/* Innermost first: sc_sleep returns into f3, f3 into f2... */
	SC_ASSERT_CHAIN(&st, "sc_sleep", "f3", "f2", "f1");
	assert_int_equal(sc_test_stack_find(&st, 0, "f3") + 1,
	    sc_test_stack_find(&st, 0, "f2"));
	assert_int_equal(sc_test_stack_find(&st, 0, "f2") + 1,
	    sc_test_stack_find(&st, 0, "f1"));
	/* No IPI for a thread that is not running. */
	assert_int_equal(c1.captures - c0.captures, 1);
	assert_int_equal(c1.captures_running, c0.captures_running);
	assert_int_equal(c1.ipis_sent, c0.ipis_sent);

	/* The same again, with the proc lock held too (as kstack does). */
	sc_proc_lock(tp);
	assert_int_equal(capture(&st, td), 0);
	sc_proc_unlock(tp);
	SC_ASSERT_CHAIN(&st, "sc_sleep", "f3", "f2", "f1");

	wake_and_join(&s, td);
}

/* ------------------------------------------------------------------------
 * Threads that never ran: 0, empty
 * ------------------------------------------------------------------------ */

/*
 * 1 CPU held by a thread that never yields: an ithread never scheduled
 * (IWAIT) and a runnable thread that cannot get a CPU (RUNQ) have never
 * run (pcb_rbp == 0): their captures are 0 with depth 0.
 */
static void
test_never_run(void **state)
{
	struct hold h = { 0 };
	struct sc_thread *holder, *it, *rq;
	struct sc_stack st;

	it = sc_test_spawn_ithread("ithread", nop, NULL);
	holder = sc_test_spawn("holder", hold_cpu, &h);
	SC_WAIT_FOR(atomic_load(&h.holding));
	rq = sc_test_spawn("runnable", nop, NULL);

	assert_int_equal(sc_thread_state(it), SC_TDS_INHIBITED);
	assert_int_equal(sc_thread_inhibitors(it), SC_TDI_IWAIT);
	stack_garbage(&st);
	assert_int_equal(capture(&st, it), 0);
	assert_int_equal(st.depth, 0);

	assert_int_equal(sc_thread_state(rq), SC_TDS_RUNQ);
	stack_garbage(&st);
	assert_int_equal(capture(&st, rq), 0);
	assert_int_equal(st.depth, 0);

	/* The ithread scheduled while the CPU is held: RUNQ, still empty. */
	assert_int_equal(sc_ithread_schedule(it), 0);
	assert_int_equal(sc_thread_state(it), SC_TDS_RUNQ);
	stack_garbage(&st);
	assert_int_equal(capture(&st, it), 0);
	assert_int_equal(st.depth, 0);

	atomic_store(&h.release, 1);
	assert_int_equal(sc_thread_join(holder), 0);
	assert_int_equal(sc_thread_join(rq), 0);
	assert_int_equal(sc_thread_join(it), 0);
}

/* ------------------------------------------------------------------------
 * KASSERTs: swapped, not locked
 * ------------------------------------------------------------------------ */

static void
assert_msg_has(const char *what)
{
	if (strstr(sc_test_panic_msg(), what) == NULL)
		fail_msg("panic message \"%s\" lacks \"%s\"",
		    sc_test_panic_msg(), what);
}

/* A swapped thread is a KASSERT: its stack must never be walked. */
static void
test_swapped_asserts(void **state)
{
	struct sleeper s = { 0 };
	struct sc_thread *td;
	struct sc_stack st;
	char who[64];

	td = sc_test_spawn("sleeper", f1, &s);
	WAIT_ASLEEP(td);
	assert_int_equal(sc_thread_swapout(td), 0);

	sc_set_panic_handler(sc_test_panic_cmocka);
	sc_thread_lock(td);
	expect_assert_failure(sc_stack_save_td(&st, td));
	sc_thread_unlock(td);

	sc_set_panic_handler(sc_test_panic_record);
	sc_thread_lock(td);
	assert_int_equal(sc_stack_save_td(&st, td), EINVAL);
	assert_true(sc_thread_lock_owned(td));
	sc_thread_unlock(td);
	assert_int_equal(sc_test_panic_count(), 1);
	snprintf(who, sizeof(who), "thread %d \"sleeper\"", sc_thread_tid(td));
	assert_msg_has("sc_stack_save_td");
	assert_msg_has("!TD_IS_SWAPPED(td)");
	assert_msg_has(who);
	assert_msg_has("is swapped");
	assert_msg_has("[plain pthread]");

	assert_int_equal(sc_thread_swapin(td), 0);
	wake_and_join(&s, td);
	assert_int_equal(sc_test_panic_count(), 1);
}

/* A simulated thread that captures a swapped thread (lock held) is parked
 * for good when the handler returns; the lock it held is released. */
struct capturer {
	_Atomic(struct sc_thread *) target;
	atomic_int	before, after;
};

static void
capture_swapped(void *arg)
{
	struct capturer *c = arg;
	struct sc_thread *td = atomic_load(&c->target);
	struct sc_stack st;

	atomic_store(&c->before, 1);
	sc_thread_lock(td);
	(void)sc_stack_save_td(&st, td);	/* KASSERT: parked here */
	sc_thread_unlock(td);
	atomic_store(&c->after, 1);
}

static void
test_swapped_asserts_sim_thread(void **state)
{
	struct sleeper s = { 0 };
	struct capturer c = { .target = NULL };
	struct sc_thread *td, *cap;
	char who[64];

	td = sc_test_spawn("sleeper", f1, &s);
	WAIT_ASLEEP(td);
	assert_int_equal(sc_thread_swapout(td), 0);

	sc_set_panic_handler(sc_test_panic_record);
	atomic_store(&c.target, td);
	cap = sc_test_spawn("capturer", capture_swapped, &c);
	SC_WAIT_FOR(sc_test_panic_count() == 1);
	SC_WAIT_STATE(cap, SC_TDS_INHIBITED, SC_TDI_SUSPENDED);
	assert_int_equal(atomic_load(&c.before), 1);
	assert_msg_has("sc_stack_save_td");
	assert_msg_has("is swapped");
	snprintf(who, sizeof(who), "[curthread %d \"capturer\"]",
	    sc_thread_tid(cap));
	assert_msg_has(who);

	/* The parked thread gave the target's lock back. */
	sc_thread_lock(td);
	sc_thread_unlock(td);
	assert_int_equal(sc_thread_swapin(td), 0);
	wake_and_join(&s, td);
	assert_int_equal(atomic_load(&c.after), 0);
	assert_false(sc_thread_exited(cap));
}

static void
test_unlocked_asserts(void **state)
{
	struct sleeper s = { 0 };
	struct sc_thread *td;
	struct sc_stack st;
	char who[64];

	td = sc_test_spawn("sleeper", f1, &s);
	WAIT_ASLEEP(td);

	sc_set_panic_handler(sc_test_panic_cmocka);
	expect_assert_failure(sc_stack_save_td(&st, td));

	sc_set_panic_handler(sc_test_panic_record);
	assert_int_equal(sc_stack_save_td(&st, td), EINVAL);
	assert_int_equal(sc_test_panic_count(), 1);
	snprintf(who, sizeof(who), "thread %d \"sleeper\" is not locked",
	    sc_thread_tid(td));
	assert_msg_has("sc_stack_save_td");
	assert_msg_has("sc_thread_lock_owned(td)");
	assert_msg_has(who);

	/* Locked, the same call works. */
	assert_int_equal(capture(&st, td), 0);
	SC_ASSERT_CHAIN(&st, "f3", "f2", "f1");
	wake_and_join(&s, td);
}

/* ------------------------------------------------------------------------
 * Exited: ESRCH
 * ------------------------------------------------------------------------ */

static void
test_exited_esrch(void **state)
{
	struct sc_thread *td;
	struct sc_stack st;

	td = sc_test_spawn("short", nop, NULL);
	assert_int_equal(sc_thread_join(td), 0);
	assert_true(sc_thread_exited(td));
	stack_garbage(&st);
	assert_int_equal(capture(&st, td), ESRCH);
	sc_proc_lock(tp);
	assert_int_equal(capture(&st, td), ESRCH);
	sc_proc_unlock(tp);
}

/* ------------------------------------------------------------------------
 * kern.proc.kstack
 * ------------------------------------------------------------------------ */

static void
test_proc_kstack(void **state)
{
	struct sleeper sa = { 0 }, sb = { 0 };
	struct sc_thread *a, *b, *it, *gone;
	struct sc_kstack kk[8];
	size_t n;

	gone = sc_test_spawn("gone", nop, NULL);
	a = sc_test_spawn("sleeper-a", f1, &sa);
	b = sc_test_spawn("sleeper-b", f1, &sb);
	it = sc_test_spawn_ithread("ithread", nop, NULL);
	assert_int_equal(sc_thread_join(gone), 0);
	WAIT_ASLEEP(a);
	WAIT_ASLEEP(b);
	assert_int_equal(sc_thread_swapout(b), 0);

	memset(kk, 0, sizeof(kk));
	assert_int_equal(sc_proc_kstack(tp, kk, 8, &n), 0);
	assert_int_equal(n, 3);			/* exited threads left out */

	assert_int_equal(kk[0].tid, sc_thread_tid(a));
	assert_string_equal(kk[0].tdname, "sleeper-a");
	assert_int_equal(kk[0].state, SC_KKST_STATE_STACKOK);
	SC_ASSERT_CHAIN(&kk[0].stack, "sc_sleep", "f3", "f2", "f1");

	assert_int_equal(kk[1].tid, sc_thread_tid(b));
	assert_string_equal(kk[1].tdname, "sleeper-b");
	assert_int_equal(kk[1].state, SC_KKST_STATE_SWAPPED);
	assert_int_equal(kk[1].stack.depth, 0);

	assert_int_equal(kk[2].tid, sc_thread_tid(it));
	assert_string_equal(kk[2].tdname, "ithread");
	assert_int_equal(kk[2].state, SC_KKST_STATE_STACKOK);
	assert_int_equal(kk[2].stack.depth, 0);

	/* A short buffer: *n is still the number of threads. */
	memset(kk, 0, sizeof(kk));
	assert_int_equal(sc_proc_kstack(tp, kk, 1, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(kk[0].tid, sc_thread_tid(a));
	assert_int_equal(kk[1].tid, 0);

	assert_int_equal(sc_thread_swapin(b), 0);
	wake_and_join(&sa, a);
	wake_and_join(&sb, b);
	assert_int_equal(sc_ithread_schedule(it), 0);
	assert_int_equal(sc_thread_join(it), 0);
	assert_int_equal(sc_proc_kstack(tp, kk, 8, &n), 0);
	assert_int_equal(n, 0);
}

/* ------------------------------------------------------------------------
 * A running thread: the IPI path, basic
 * ------------------------------------------------------------------------ */

static void
test_running_chain(void **state)
{
	struct spinner sp = { 0 };
	struct sc_counters c0, c1;
	struct sc_thread *td;
	struct sc_stack st;
	int i;

	td = sc_test_spawn("spinner", spin1, &sp);
	SC_WAIT_FOR(atomic_load(&sp.spinning));
	for (i = 0; i < 5; i++) {
		/* Nothing else is runnable: the spinner stays on its CPU. */
		assert_int_equal(sc_thread_state(td), SC_TDS_RUNNING);
		sc_machine_counters(tm, &c0);
		stack_garbage(&st);
		sc_proc_lock(tp);
		assert_int_equal(capture(&st, td), 0);
		sc_proc_unlock(tp);
		sc_machine_counters(tm, &c1);
		SC_ASSERT_CHAIN(&st, "spin3", "spin2", "spin1");
		assert_int_equal(c1.captures_running - c0.captures_running, 1);
		assert_true(c1.ipis_sent > c0.ipis_sent);
		assert_int_equal(c1.timeouts, c0.timeouts);
	}
	atomic_store(&sp.stop, 1);
	assert_int_equal(sc_thread_join(td), 0);
}

static struct sc_thread *late_td;
static _Atomic int late_made;

static void
late_nop(void *arg)
{
	(void)arg;
}

/* While the first thread is captured (proc lock held, thread lock
 * dropped), a new thread of the same process is created. */
static void
hook_create_late(void *arg, enum sc_hook_point point, struct sc_thread *td)
{
	(void)arg;
	(void)td;
	if (point != SC_HOOK_SAVE_UNLOCKED || atomic_exchange(&late_made, 1))
		return;
	if (sc_ithread_create(tp, "late", late_nop, NULL, &late_td) != 0)
		late_td = NULL;
}

static atomic_int spin_release;

static void
spin_for_kstack(void *arg)
{
	(void)arg;
	while (!atomic_load(&spin_release))
		sc_maybe_yield();
}

/*
 * sc_proc_kstack() lists the threads of its snapshot, as
 * sysctl_kern_proc_kstack() does: a thread created while the list is
 * being made (here, during the capture of the first one) is not in it.
 */
static void
test_proc_kstack_snapshot(void **state)
{
	struct sc_kstack kk[8];
	struct sc_thread *first;
	size_t n = 0, i;

	atomic_store(&late_made, 0);
	atomic_store(&spin_release, 0);
	late_td = NULL;
	first = sc_test_spawn("first", spin_for_kstack, NULL);
	SC_WAIT_STATE(first, SC_TDS_RUNNING, 0);
	sc_machine_set_hook(tm, hook_create_late, NULL);
	assert_int_equal(sc_proc_kstack(tp, kk, 8, &n), 0);
	sc_machine_set_hook(tm, NULL, NULL);
	assert_int_equal(atomic_load(&late_made), 1);
	assert_non_null(late_td);
	assert_int_equal(n, 1);
	assert_int_equal(kk[0].tid, sc_thread_tid(first));
	for (i = 0; i < n; i++)
		assert_int_not_equal(kk[i].tid, sc_thread_tid(late_td));
	/* The next call sees it. */
	assert_int_equal(sc_proc_kstack(tp, kk, 8, &n), 0);
	assert_int_equal(n, 2);
	atomic_store(&spin_release, 1);
	assert_int_equal(sc_ithread_schedule(late_td), 0);
	assert_int_equal(sc_thread_join(late_td), 0);
	assert_int_equal(sc_thread_join(first), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sleeper_chain,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_never_run,
		    sc_test_setup_1cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_swapped_asserts,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(
		    test_swapped_asserts_sim_thread, sc_test_setup_2cpu,
		    sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_unlocked_asserts,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_exited_esrch,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_proc_kstack_snapshot,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_proc_kstack,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_running_chain,
		    sc_test_setup_2cpu, sc_test_teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
