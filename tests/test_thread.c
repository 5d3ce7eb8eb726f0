/*
 * Threads: create, run, exit, interrupt threads, user mode, join, the
 * KASSERT handler that parks a thread, destroy whatever the states.
 *
 * Kernel counterparts: kern_thread.c (thread_exit), kern_intr.c
 * (ithread_schedule), kern_shutdown.c (panic).
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

#include "sc_test.h"
#include "sc_test_bodies.h"

/* ------------------------------------------------------------------------
 * Create, run, exit
 * ------------------------------------------------------------------------ */

/*
 * 1 CPU, held by a thread that never yields: a new thread is runnable at
 * once (RUNQ) but cannot start; released, it runs (RUNNING, on cpu0, as
 * curthread) and exits (INACTIVE, exited, `exits`).
 */
static void
test_create_run_exit(void **state)
{
	struct hold h = { 0 };
	struct seen s = { 0 };
	struct sc_thread *a, *b;
	uint64_t exits0;

	exits0 = SC_COUNTER(tm, exits);
	a = sc_test_spawn("holder", hold_cpu, &h);
	SC_WAIT_FOR(atomic_load(&h.holding));
	assert_int_equal(sc_thread_state(a), SC_TDS_RUNNING);
	assert_int_equal(sc_thread_oncpu(a), 0);

	b = sc_test_spawn("recorder", record_self, &s);
	assert_int_equal(sc_thread_state(b), SC_TDS_RUNQ);
	assert_int_equal(sc_thread_inhibitors(b), 0);
	assert_int_equal(sc_thread_oncpu(b), SC_NOCPU);
	assert_int_equal(sc_thread_lastcpu(b), SC_NOCPU);
	assert_false(sc_thread_exited(b));
	assert_string_equal(sc_thread_name(b), "recorder");
	assert_ptr_equal(sc_thread_proc(b), tp);
	assert_int_not_equal(sc_thread_tid(a), sc_thread_tid(b));
	assert_null(sc_thread_wmesg(b));
	assert_int_equal(atomic_load(&s.ran), 0);	/* cannot have run */

	atomic_store(&h.release, 1);
	SC_WAIT_FOR(atomic_load(&s.ran));
	assert_int_equal(sc_thread_join(b), 0);
	assert_int_equal(sc_thread_join(a), 0);

	/* What b saw of itself while it ran. */
	assert_ptr_equal(atomic_load(&s.self), b);
	assert_int_equal(atomic_load(&s.state), SC_TDS_RUNNING);
	assert_int_equal(atomic_load(&s.oncpu), 0);
	assert_int_equal(atomic_load(&s.curcpu), 0);
	assert_int_equal(atomic_load(&s.lastcpu), 0);

	/* Exit. */
	assert_true(sc_thread_exited(a));
	assert_true(sc_thread_exited(b));
	assert_int_equal(sc_thread_state(b), SC_TDS_INACTIVE);
	assert_int_equal(sc_thread_oncpu(b), SC_NOCPU);
	assert_int_equal(SC_COUNTER(tm, exits) - exits0, 2);
	/* Joining an exited thread returns at once. */
	assert_int_equal(sc_thread_join(b), 0);
	/* The test thread is no simulated thread. */
	assert_null(sc_curthread());
	assert_int_equal(sc_curcpu(), SC_NOCPU);
}

/* A thread created by a simulated thread runs too, in the same proc. */
static void
create_child(void *arg)
{
	struct seen *s = arg;
	struct sc_thread *child = NULL;

	(void)sc_thread_create(sc_thread_proc(sc_curthread()), "child",
	    record_self, s, &child);
}

static void
test_create_from_sim_thread(void **state)
{
	struct seen s = { 0 };
	struct sc_thread *td, *child, *list[4];
	size_t n;

	td = sc_test_spawn("parent", create_child, &s);
	SC_WAIT_FOR(atomic_load(&s.ran) == 1);
	child = atomic_load(&s.self);
	SC_WAIT_FOR(sc_thread_exited(td) && sc_thread_exited(child));
	/* Exited threads stay listed until they are joined. */
	sc_proc_threads(tp, list, 4, &n);
	assert_int_equal(n, 2);
	assert_ptr_equal(list[0], td);
	assert_ptr_equal(list[1], child);
	assert_ptr_equal(sc_thread_proc(child), tp);
	assert_int_equal(sc_thread_join(td), 0);
	assert_int_equal(sc_thread_join(child), 0);
	sc_proc_threads(tp, list, 4, &n);
	assert_int_equal(n, 0);
}

/* ------------------------------------------------------------------------
 * Interrupt threads
 * ------------------------------------------------------------------------ */

static void
test_ithread(void **state)
{
	struct seen s = { 0 };
	struct sc_thread *td;

	td = sc_test_spawn_ithread("ithread", record_self, &s);
	assert_int_equal(sc_thread_state(td), SC_TDS_INHIBITED);
	assert_int_equal(sc_thread_inhibitors(td), SC_TDI_IWAIT);
	assert_int_equal(sc_thread_oncpu(td), SC_NOCPU);
	assert_int_equal(sc_thread_lastcpu(td), SC_NOCPU);
	assert_false(sc_thread_exited(td));
	assert_int_equal(atomic_load(&s.ran), 0);	/* cannot have run */

	assert_int_equal(sc_ithread_schedule(td), 0);
	SC_WAIT_FOR(atomic_load(&s.ran));
	assert_int_equal(sc_thread_join(td), 0);
	assert_ptr_equal(atomic_load(&s.self), td);
	assert_int_equal(atomic_load(&s.state), SC_TDS_RUNNING);
	/* Not waiting any more. */
	assert_int_equal(sc_ithread_schedule(td), EINVAL);
}

/* An ithread swapped before it is scheduled: scheduling clears IWAIT but
 * it stays swapped; swapped in, it runs. */
static void
test_ithread_swapped(void **state)
{
	struct seen s = { 0 };
	struct sc_thread *td;

	td = sc_test_spawn_ithread("ithread", record_self, &s);
	assert_int_equal(sc_thread_swapout(td), 0);
	assert_int_equal(sc_thread_inhibitors(td),
	    SC_TDI_IWAIT | SC_TDI_SWAPPED);
	assert_int_equal(sc_ithread_schedule(td), 0);
	assert_int_equal(sc_thread_state(td), SC_TDS_INHIBITED);
	assert_int_equal(sc_thread_inhibitors(td), SC_TDI_SWAPPED);
	assert_int_equal(atomic_load(&s.ran), 0);
	assert_int_equal(sc_ithread_schedule(td), EINVAL);

	assert_int_equal(sc_thread_swapin(td), 0);
	SC_WAIT_FOR(atomic_load(&s.ran));
	assert_int_equal(sc_thread_join(td), 0);
}

/* ------------------------------------------------------------------------
 * User mode
 * ------------------------------------------------------------------------ */

struct umode {
	atomic_int	kdepth_before, kdepth_after, udepth;
	_Atomic(struct sc_thread *) uself;
	atomic_int	ustate, uoncpu, ucurcpu;
	atomic_int	done;
};

SC_NOIPA static void
in_user_mode(void *arg)
{
	struct umode *u = arg;
	struct sc_stack st;

	/*
	 * sc_stack_save() walks frame records only inside the curthread's
	 * kernel stack.  Were this frame on the kernel stack, the first
	 * record would give a return address into sc__user_enter (depth >=
	 * 1): depth 0 shows that user mode runs on another stack, and that
	 * no frame record leads back into the kernel stack.
	 */
	sc_stack_save(&st);
	atomic_store(&u->udepth, st.depth);
	atomic_store(&u->uself, sc_curthread());
	atomic_store(&u->ustate, (int)sc_thread_state(sc_curthread()));
	atomic_store(&u->uoncpu, sc_thread_oncpu(sc_curthread()));
	atomic_store(&u->ucurcpu, sc_curcpu());
	SC_BARRIER();
}

SC_NOIPA static void
user_caller(void *arg)
{
	struct umode *u = arg;
	struct sc_stack st;

	sc_stack_save(&st);
	atomic_store(&u->kdepth_before, st.depth);
	sc_user_call(in_user_mode, u);
	SC_BARRIER();
	sc_stack_save(&st);
	atomic_store(&u->kdepth_after, st.depth);
	atomic_store(&u->done, 1);
}

static void
test_user_mode(void **state)
{
	struct umode u = { 0 };
	struct sc_thread *td;

	td = sc_test_spawn("user", user_caller, &u);
	assert_int_equal(sc_thread_join(td), 0);
	assert_int_equal(atomic_load(&u.done), 1);
	/* Kernel mode: frames (user_caller, fork_exit...) on the kstack. */
	assert_true(atomic_load(&u.kdepth_before) > 0);
	assert_true(atomic_load(&u.kdepth_after) > 0);
	/* User mode: no kernel frame reachable. */
	assert_int_equal(atomic_load(&u.udepth), 0);
	/* Still the same thread, running on its CPU. */
	assert_ptr_equal(atomic_load(&u.uself), td);
	assert_int_equal(atomic_load(&u.ustate), SC_TDS_RUNNING);
	assert_int_equal(atomic_load(&u.uoncpu), atomic_load(&u.ucurcpu));
	assert_int_not_equal(atomic_load(&u.ucurcpu), SC_NOCPU);
}

/* ------------------------------------------------------------------------
 * Join
 * ------------------------------------------------------------------------ */

struct joiner {
	_Atomic(struct sc_thread *) target;
	atomic_int	self_rc, rc, saw_exited, done;
};

static void
join_target(void *arg)
{
	struct joiner *j = arg;

	atomic_store(&j->self_rc, sc_thread_join(sc_curthread()));
	atomic_store(&j->rc, sc_thread_join(atomic_load(&j->target)));
	atomic_store(&j->saw_exited, sc_thread_exited(atomic_load(&j->target)));
	atomic_store(&j->done, 1);
}

/* Join on itself is EDEADLK; a simulated joiner sleeps ("join") until the
 * target exits. */
static void
test_join(void **state)
{
	struct joiner j = { .target = NULL };
	struct spin s = { 0 };
	struct sc_thread *target, *joiner;

	target = sc_test_spawn("target", spin_polite, &s);
	atomic_store(&j.target, target);
	joiner = sc_test_spawn("joiner", join_target, &j);
	SC_WAIT_STATE(joiner, SC_TDS_INHIBITED, SC_TDI_SLEEPING);
	assert_string_equal(sc_thread_wmesg(joiner), "join");
	assert_int_equal(atomic_load(&j.self_rc), EDEADLK);
	assert_int_equal(atomic_load(&j.done), 0);

	atomic_store(&s.release, 1);
	assert_int_equal(sc_thread_join(joiner), 0);
	assert_int_equal(atomic_load(&j.rc), 0);
	assert_int_equal(atomic_load(&j.saw_exited), 1);
	assert_true(sc_thread_exited(target));
}

/* A join with a lock of the target's held, from a plain pthread. */
struct locked_join {
	struct sc_thread *target;
	int		rc;
	int		still_owned;	/* the lock, after the join */
};

static void
join_proc_locked(void *arg)
{
	struct locked_join *lj = arg;

	sc_proc_lock(tp);
	lj->rc = sc_thread_join(lj->target);
	lj->still_owned = sc_proc_lock_owned(tp);
	sc_proc_unlock(tp);
}

/* A join with the target's thread lock held, from a plain pthread. */
static void
join_thread_locked(void *arg)
{
	struct locked_join *lj = arg;

	sc_thread_lock(lj->target);
	lj->rc = sc_thread_join(lj->target);
	lj->still_owned = sc_thread_lock_owned(lj->target);
	sc_thread_unlock(lj->target);
}

/* The same from a simulated thread; done publishes rc. */
static void
join_proc_locked_sim(void *arg)
{
	struct joiner *j = arg;

	sc_proc_lock(tp);
	atomic_store(&j->rc, sc_thread_join(atomic_load(&j->target)));
	sc_proc_unlock(tp);
	atomic_store(&j->done, 1);
}

/*
 * A join with the target's proc lock held waited for ever: the target's
 * exit takes that lock (the header even said "unless the caller holds
 * it").  Now it is EDEADLK at once, from a plain pthread or a simulated
 * thread, with the lock still held, and also for a target that has
 * exited already (the answer does not depend on timing); without the lock
 * the join is 0.
 */
static void
test_join_proc_locked(void **state)
{
	struct locked_join lj;
	struct joiner j = { .target = NULL };
	struct spin s = { 0 };
	struct sc_thread *target, *joiner;

	target = sc_test_spawn("target", spin_polite, &s);
	SC_WAIT_FOR(atomic_load(&s.spinning));
	lj.target = target;
	lj.rc = -1;
	sc_test_run_bounded(join_proc_locked, &lj);
	assert_int_equal(lj.rc, EDEADLK);
	assert_true(lj.still_owned);
	atomic_store(&j.target, target);
	joiner = sc_test_spawn("joiner", join_proc_locked_sim, &j);
	SC_WAIT_FOR(atomic_load(&j.done));
	assert_int_equal(atomic_load(&j.rc), EDEADLK);
	assert_int_equal(sc_thread_join(joiner), 0);
	assert_false(sc_thread_exited(target));

	atomic_store(&s.release, 1);
	SC_WAIT_FOR(sc_thread_exited(target));
	lj.rc = -1;
	sc_test_run_bounded(join_proc_locked, &lj);
	assert_int_equal(lj.rc, EDEADLK);
	assert_int_equal(sc_thread_join(target), 0);
}

/*
 * A join with a spin lock held (the target's thread lock here) waited for
 * ever too: the target cannot exit, nor be switched to, without that
 * lock.  A KASSERT, as every wait with a spin lock held (mi_switch()'s
 * rule): the call returns EINVAL with the lock still held.
 */
static void
test_join_spin_held(void **state)
{
	struct locked_join lj;
	struct spin s = { 0 };
	struct sc_thread *target;

	target = sc_test_spawn("target", spin_polite, &s);
	SC_WAIT_FOR(atomic_load(&s.spinning));
	sc_set_panic_handler(sc_test_panic_record);
	lj.target = target;
	lj.rc = -1;
	sc_test_run_bounded(join_thread_locked, &lj);
	assert_int_equal(lj.rc, EINVAL);
	assert_true(lj.still_owned);
	assert_int_equal(sc_test_panic_count(), 1);
	assert_non_null(strstr(sc_test_panic_msg(), "spin lock"));
	atomic_store(&s.release, 1);
	assert_int_equal(sc_thread_join(target), 0);
}

/* ------------------------------------------------------------------------
 * KASSERTs
 * ------------------------------------------------------------------------ */

static int dummy_wchan;

static void
nop(void *arg)
{
	(void)arg;
}

/* On the test's own thread: CMocka's expect_assert_failure pattern, and a
 * recording handler that lets the call return EINVAL. */
static void
test_panic_plain_pthread(void **state)
{
	sc_set_panic_handler(sc_test_panic_cmocka);
	expect_assert_failure(sc_yield());
	expect_assert_failure(sc_sleep(&dummy_wchan, "never"));
	expect_assert_failure(sc_user_call(nop, NULL));
	expect_assert_failure(sc_sched_bind(0));

	sc_set_panic_handler(sc_test_panic_record);
	sc_test_panic_reset();
	assert_int_equal(sc_sched_bind(0), EINVAL);
	assert_int_equal(sc_test_panic_count(), 1);
	assert_non_null(strstr(sc_test_panic_msg(), "sc_sched_bind"));
	assert_non_null(strstr(sc_test_panic_msg(), "td != NULL"));
	assert_non_null(strstr(sc_test_panic_msg(), "plain pthread"));
}

struct parkee {
	atomic_int	before, after;
};

static void
spinlock_exit_unbalanced(void *arg)
{
	struct parkee *pk = arg;

	atomic_store(&pk->before, 1);
	sc_spinlock_exit();		/* no sc_spinlock_enter(): KASSERT */
	atomic_store(&pk->after, 1);	/* never: the thread is parked */
}

/*
 * On a simulated thread a handler that returns parks the thread for good
 * (INHIBITED, SC_TDI_SUSPENDED); its CPU (the only one) runs others.
 */
static void
test_panic_sim_thread_parks(void **state)
{
	struct parkee pk = { 0 };
	struct seen s = { 0 };
	struct sc_thread *td, *other;
	char tidstr[32];

	sc_set_panic_handler(sc_test_panic_record);
	td = sc_test_spawn("unbalanced", spinlock_exit_unbalanced, &pk);
	SC_WAIT_FOR(sc_test_panic_count() == 1);
	SC_WAIT_STATE(td, SC_TDS_INHIBITED, SC_TDI_SUSPENDED);
	assert_int_equal(atomic_load(&pk.before), 1);
	assert_non_null(strstr(sc_test_panic_msg(), "sc_spinlock_exit"));
	assert_non_null(strstr(sc_test_panic_msg(), "(n > 0)"));
	snprintf(tidstr, sizeof(tidstr), "curthread %d \"unbalanced\"",
	    sc_thread_tid(td));
	assert_non_null(strstr(sc_test_panic_msg(), tidstr));

	other = sc_test_spawn("other", record_self, &s);
	assert_int_equal(sc_thread_join(other), 0);
	assert_int_equal(atomic_load(&s.curcpu), 0);
	/* Parked for good. */
	assert_int_equal(atomic_load(&pk.after), 0);
	assert_false(sc_thread_exited(td));
	assert_int_equal(sc_thread_state(td), SC_TDS_INHIBITED);
	assert_int_equal(sc_thread_oncpu(td), SC_NOCPU);
	assert_int_equal(sc_test_panic_count(), 1);
}

static void
proc_lock_then_panic(void *arg)
{
	struct parkee *pk = arg;

	sc_proc_lock(sc_thread_proc(sc_curthread()));
	spinlock_exit_unbalanced(pk);
}

/*
 * A parked thread gives back its spin locks; it should give back its proc
 * lock too, or no other thread of its process can ever exit (or be
 * swapped, or listed by sc_proc_kstack()).
 *
 * (The regression test of a fixed bug: sc__thread_park() released only
 * spin locks, and the second thread below waited for ever in
 * thread_exit().)
 */
static void
test_panic_park_releases_proc_lock(void **state)
{
	struct parkee pk = { 0 };
	struct sc_thread *td, *other;

	sc_set_panic_handler(sc_test_panic_record);
	td = sc_test_spawn("locked-panic", proc_lock_then_panic, &pk);
	SC_WAIT_FOR(sc_test_panic_count() == 1);
	SC_WAIT_STATE(td, SC_TDS_INHIBITED, SC_TDI_SUSPENDED);
	assert_non_null(strstr(sc_test_panic_msg(), "sc_spinlock_exit"));

	other = sc_test_spawn("exits", nop, NULL);
	SC_WAIT_FOR(sc_thread_exited(other) ||
	    (sc_thread_state(other) == SC_TDS_INHIBITED &&
	    sc_thread_wmesg(other) != NULL));
	if (!sc_thread_exited(other))
		fail_msg("thread %d cannot exit: it sleeps on \"%s\", the "
		    "proc lock that parked thread %d still holds",
		    sc_thread_tid(other), sc_thread_wmesg(other),
		    sc_thread_tid(td));
	assert_int_equal(sc_thread_join(other), 0);
}

/* ------------------------------------------------------------------------
 * Destroy, whatever state the threads are in
 * ------------------------------------------------------------------------ */

struct join_forever {
	_Atomic(struct sc_thread *) target;
};

static void
join_never_returns(void *arg)
{
	struct join_forever *jf = arg;

	(void)sc_thread_join(atomic_load(&jf->target));
}

/*
 * 1 CPU: a sleeper swapped out, an ithread never scheduled, a parked
 * thread, a joiner asleep on a thread that never exits, a thread asleep on
 * the proc lock, a holder that never calls the library (stopped from its
 * signal handler), a runnable thread that never ran.  sc_machine_destroy()
 * frees all (ASan's LeakSanitizer checks), and a later wakeup of their
 * channels touches nothing freed (ASan checks).
 */
static void
test_destroy_in_any_state(void **state)
{
	static struct sleeper s1 = { .wmesg = "destroy" };
	static struct sleeper s2 = { .wmesg = "swapped" };
	static struct parkee pk;
	static struct join_forever jf;
	static struct spin plk;
	static struct hold h;
	struct sc_thread *sl, *sw, *exiter, *joiner, *holder, *rq;

	memset(&pk, 0, sizeof(pk));
	memset(&plk, 0, sizeof(plk));
	memset(&h, 0, sizeof(h));
	atomic_store(&s1.go, 0);
	atomic_store(&s2.go, 0);
	sc_set_panic_handler(sc_test_panic_record);

	sl = sc_test_spawn("sleeper", sleep_until_go, &s1);
	WAIT_ASLEEP(sl);
	sw = sc_test_spawn("swapped", sleep_until_go, &s2);
	WAIT_ASLEEP(sw);
	assert_int_equal(sc_thread_swapout(sw), 0);
	(void)sc_test_spawn_ithread("iwait", nop, NULL);
	(void)sc_test_spawn("parked", spinlock_exit_unbalanced, &pk);
	SC_WAIT_FOR(sc_test_panic_count() == 1);

	/* A thread whose exit waits for the proc lock, held by a plain
	 * pthread (the test) until the machine is gone. */
	exiter = sc_test_spawn("exiter", spin_polite, &plk);
	SC_WAIT_FOR(atomic_load(&plk.spinning));
	sc_proc_lock(tp);
	atomic_store(&plk.release, 1);
	SC_WAIT_FOR(atomic_load(&plk.returning));
	SC_WAIT_FOR(sc_thread_state(exiter) == SC_TDS_INHIBITED);

	atomic_store(&jf.target, sl);
	joiner = sc_test_spawn("joiner", join_never_returns, &jf);
	WAIT_ASLEEP(joiner);
	assert_string_equal(sc_thread_wmesg(joiner), "join");

	holder = sc_test_spawn("holder", hold_cpu, &h);
	SC_WAIT_FOR(atomic_load(&h.holding));
	assert_int_equal(sc_thread_state(holder), SC_TDS_RUNNING);
	rq = sc_test_spawn("runnable", nop, NULL);
	assert_int_equal(sc_thread_state(rq), SC_TDS_RUNQ);

	sc_machine_destroy(tm);
	tm = NULL;
	/* Nothing of the machine is left on a sleep queue. */
	sc_wakeup(&s1);
	sc_wakeup(&s2);
	sc_wakeup(sl);
	assert_false(atomic_load(&s1.done));
	assert_int_equal(atomic_load(&pk.after), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_run_exit,
		    sc_test_setup_1cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_create_from_sim_thread,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_ithread,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_ithread_swapped,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_user_mode,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_join,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_join_proc_locked,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_join_spin_held,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_panic_plain_pthread,
		    sc_test_setup_1cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_panic_sim_thread_parks,
		    sc_test_setup_1cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(
		    test_panic_park_releases_proc_lock,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_destroy_in_any_state,
		    sc_test_setup_1cpu, sc_test_teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
