/*
 * The thread zone (kern_thread.c, the kernel's thread_zone): the struct of
 * a thread that was reaped and joined is reused for a later thread, of any
 * proc; one that is not joined, or that a join still waits on, is not.  A
 * reused thread is the new thread through and through: tid, proc, name,
 * kernel stack, generation, its captures and its kern.proc.kstack entry.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "sc_test.h"
#include "sc_test_bodies.h"
#include "sc_internal.h"	/* td_kstack: where a stack was mapped */

/* A body with a chain of its own: reuse_body -> reuse_outer -> loop. */
struct body {
	atomic_int	running;
	atomic_int	sleep;		/* go to sleep on the struct */
	atomic_int	release;
	_Atomic(struct sc_thread *) self;
	_Atomic(struct sc_proc *) proc;
	atomic_int	tid;
};

SC_NOIPA static void
reuse_inner(struct body *b)
{
	while (!atomic_load(&b->release)) {
		if (atomic_load(&b->sleep))
			sc_sleep(b, "reuse");
		else
			sc_maybe_yield();
	}
	SC_BARRIER();
}

SC_NOIPA static void
reuse_outer(struct body *b)
{
	reuse_inner(b);
	SC_BARRIER();
}

SC_NOIPA static void
reuse_body(void *arg)
{
	struct body *b = arg;
	struct sc_thread *self = sc_curthread();

	atomic_store(&b->self, self);
	atomic_store(&b->proc, sc_thread_proc(self));
	atomic_store(&b->tid, sc_thread_tid(self));
	atomic_store(&b->running, 1);
	reuse_outer(b);
	SC_BARRIER();
}

static void
quick(void *arg)
{
	(void)arg;
}

/* A thread that ran quick() and was joined: its struct is in the zone. */
static struct sc_thread *
exited_and_joined(struct sc_proc *p, const char *name)
{
	struct sc_thread *td = NULL;

	assert_int_equal(sc_thread_create(p, name, quick, NULL, &td), 0);
	assert_int_equal(sc_thread_join(td), 0);
	return (td);
}

static void
capture(struct sc_thread *td, struct sc_stack *st, int *error)
{
	struct sc_proc *p = sc_thread_proc(td);

	*error = sc_stack_save_td_locked(p, td, st);
}

/* The idle threads are allocated; a reaped, joined struct is reused, for
 * another proc, with a new tid, name and generation. */
static void
test_joined_struct_is_reused(void **state)
{
	struct sc_counters c0, c1;
	struct sc_thread *a, *b, *list[4];
	struct sc_proc *q;
	struct body bb = { 0 };
	size_t n;
	int tid_a;

	(void)state;
	c0 = sc_counters_get(tm);
	assert_int_equal(c0.thread_allocs, 2);	/* the idle threads */
	assert_int_equal(c0.thread_reuses, 0);
	a = exited_and_joined(tp, "first");
	tid_a = sc_thread_tid(a);
	assert_int_equal(sc_thread_gen(a), 1);
	sc_proc_threads(tp, list, 4, &n);
	assert_int_equal(n, 0);		/* a joined thread leaves its proc */

	assert_int_equal(sc_proc_create(tm, "other", &q), 0);
	assert_int_equal(sc_thread_create(q, "second", reuse_body, &bb, &b),
	    0);
	assert_ptr_equal(b, a);
	SC_WAIT_FOR(atomic_load(&bb.running));
	c1 = sc_counters_get(tm);
	assert_int_equal(c1.thread_allocs - c0.thread_allocs, 1);
	assert_int_equal(c1.thread_reuses - c0.thread_reuses, 1);
	assert_int_equal(sc_thread_gen(b), 2);
	assert_true(sc_thread_tid(b) > tid_a);
	assert_int_equal(atomic_load(&bb.tid), sc_thread_tid(b));
	assert_ptr_equal(sc_thread_proc(b), q);
	assert_ptr_equal(atomic_load(&bb.proc), q);
	assert_ptr_equal(atomic_load(&bb.self), b);
	assert_string_equal(sc_thread_name(b), "second");
	assert_false(sc_thread_exited(b));
	sc_proc_threads(q, list, 4, &n);
	assert_int_equal(n, 1);
	assert_ptr_equal(list[0], b);
	sc_proc_threads(tp, list, 4, &n);
	assert_int_equal(n, 0);

	atomic_store(&bb.release, 1);
	assert_int_equal(sc_thread_join(b), 0);
}

/* An exited thread that is not joined keeps its struct (and its place in
 * its proc's list); once joined, the struct is the next one taken. */
static void
test_unjoined_struct_is_kept(void **state)
{
	struct sc_thread *a = NULL, *b, *c, *list[4];
	size_t n;

	(void)state;
	assert_int_equal(sc_thread_create(tp, "unjoined", quick, NULL, &a), 0);
	SC_WAIT_FOR(sc_thread_exited(a));
	b = exited_and_joined(tp, "other");
	assert_ptr_not_equal(b, a);
	sc_proc_threads(tp, list, 4, &n);
	assert_int_equal(n, 1);
	assert_ptr_equal(list[0], a);
	assert_true(sc_thread_exited(a));
	assert_int_equal(sc_thread_state(a), SC_TDS_INACTIVE);
	/* b's struct is in the zone, a's is not: b's comes back. */
	c = exited_and_joined(tp, "third");
	assert_ptr_equal(c, b);
	assert_int_equal(sc_thread_join(a), 0);
	c = exited_and_joined(tp, "fourth");
	assert_ptr_equal(c, a);
	assert_int_equal(sc_thread_gen(a), 2);
	assert_int_equal(SC_COUNTER(tm, thread_reuses), 2);
}

/* A reused struct's thread is captured as itself: asleep (pcb walk) and
 * running (IPI); kern.proc.kstack lists it under its new proc, with its
 * new tid and name. */
static void
test_reused_thread_captures(void **state)
{
	struct sc_thread *a, *b;
	struct sc_kstack kk[4];
	struct body bb = { 0 };
	struct sc_stack st;
	struct sc_proc *q;
	size_t n;
	int error;

	(void)state;
	a = exited_and_joined(tp, "gone");
	assert_int_equal(sc_proc_create(tm, "new", &q), 0);
	atomic_store(&bb.sleep, 1);
	assert_int_equal(sc_thread_create(q, "reused", reuse_body, &bb, &b),
	    0);
	assert_ptr_equal(b, a);
	WAIT_ASLEEP(b);
	capture(b, &st, &error);
	assert_int_equal(error, 0);
	SC_ASSERT_CHAIN(&st, "sc_sleep", "reuse_inner", "reuse_outer",
	    "reuse_body");

	assert_int_equal(sc_proc_kstack(q, kk, 4, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(kk[0].tid, sc_thread_tid(b));
	assert_string_equal(kk[0].tdname, "reused");
	assert_int_equal(kk[0].state, SC_KKST_STATE_STACKOK);
	assert_int_equal(sc_proc_kstack(tp, kk, 4, &n), 0);
	assert_int_equal(n, 0);

	/* Swapped out and in: the new thread's stack is its own mapping. */
	assert_int_equal(sc_thread_swapout(b), 0);
	assert_int_equal(sc_proc_kstack(q, kk, 4, &n), 0);
	assert_int_equal(kk[0].state, SC_KKST_STATE_SWAPPED);
	assert_int_equal(sc_thread_swapin(b), 0);

	atomic_store(&bb.sleep, 0);
	sc_wakeup(&bb);
	SC_WAIT_STATE(b, SC_TDS_RUNNING, 0);
	SC_WAIT_FOR(sc_thread_oncpu(b) != SC_NOCPU);
#if !defined(SC_SANITIZER_THREAD)
	/* TSan runs the IPI handler late (test_protocol.c says why). */
	capture(b, &st, &error);
	if (error == 0)
		SC_ASSERT_CHAIN(&st, "reuse_outer", "reuse_body");
	else
		assert_int_equal(error, EBUSY);	/* interrupted in libc */
#endif
	atomic_store(&bb.release, 1);
	assert_int_equal(sc_thread_join(b), 0);
}

/* A reused interrupt thread that never ran: an empty stack, as a new one
 * (its pcb is the new thread's, not the last one's). */
static void
test_reused_ithread_never_ran(void **state)
{
	struct sc_thread *a, *b;
	struct sc_stack st;
	int error;

	(void)state;
	a = exited_and_joined(tp, "ran");
	b = sc_test_spawn_ithread("iwait", quick, NULL);
	assert_ptr_equal(b, a);
	assert_int_equal(sc_thread_state(b), SC_TDS_INHIBITED);
	assert_int_equal(sc_thread_inhibitors(b), SC_TDI_IWAIT);
	capture(b, &st, &error);
	assert_int_equal(error, 0);
	assert_int_equal(st.depth, 0);
	assert_int_equal(sc_ithread_schedule(b), 0);
	assert_int_equal(sc_thread_join(b), 0);
}

/* Two joins of one thread, one asleep in a simulated thread, one on this
 * pthread: both return 0, and the struct goes to the zone once. */
struct joiner {
	_Atomic(struct sc_thread *) target;
	atomic_int	rc;
};

static void
join_it(void *arg)
{
	struct joiner *j = arg;

	atomic_store(&j->rc, sc_thread_join(atomic_load(&j->target)));
}

static void
test_concurrent_joins_release_once(void **state)
{
	struct joiner j = { .rc = -1 };
	struct sc_thread *t, *jt, *x, *y, *z;
	struct body bb = { 0 };
	uint64_t allocs;

	(void)state;
	t = sc_test_spawn("target", reuse_body, &bb);
	atomic_store(&j.target, t);
	jt = sc_test_spawn("joiner", join_it, &j);
	WAIT_ASLEEP(jt);
	assert_string_equal(sc_thread_wmesg(jt), "join");
	atomic_store(&bb.release, 1);
	assert_int_equal(sc_thread_join(t), 0);
	assert_int_equal(sc_thread_join(jt), 0);
	assert_int_equal(atomic_load(&j.rc), 0);
	/* The zone holds t and jt, each once: two reuses, then memory. */
	allocs = SC_COUNTER(tm, thread_allocs);
	x = sc_test_spawn("x", quick, NULL);
	assert_true(x == t || x == jt);
	y = sc_test_spawn("y", quick, NULL);
	assert_true((y == t || y == jt) && y != x);
	z = sc_test_spawn("z", quick, NULL);
	assert_true(z != t && z != jt);
	assert_int_equal(SC_COUNTER(tm, thread_allocs) - allocs, 1);
	assert_int_equal(SC_COUNTER(tm, thread_reuses), 2);
	assert_int_equal(sc_thread_join(x), 0);
	assert_int_equal(sc_thread_join(y), 0);
	assert_int_equal(sc_thread_join(z), 0);
}

/* Many generations of one struct, all of them its threads in turn. */
static void
test_many_generations(void **state)
{
	struct sc_thread *first, *td;
	int i, tid, last = 0;

	(void)state;
	first = exited_and_joined(tp, "gen");
	for (i = 0; i < 50; i++) {
		td = exited_and_joined(tp, "gen");
		assert_ptr_equal(td, first);
		tid = sc_thread_tid(td);
		assert_true(tid > last);
		last = tid;
	}
	assert_int_equal(sc_thread_gen(first), 51);
	assert_int_equal(SC_COUNTER(tm, thread_reuses), 50);
	assert_int_equal(SC_COUNTER(tm, exits), 51);
}

/*
 * Machines made one after another reuse their stacks' mappings (the
 * process's cache, vm_mapcache.c).  Each machine used to map its stacks
 * anew and unmap them when destroyed: with anything else mapped in the
 * meantime (here a page kept each round; under ASan its allocator), the
 * next machine's stacks landed at new addresses, and ASan's shadow of
 * the old ones stayed resident, so a fuzzer's process grew without end.
 */
#define NROUNDS	40
#define NSEEN	(NROUNDS * 8)

static void
test_stacks_outlive_machine(void **state)
{
	struct sc_thread *td;
	uintptr_t seen[NSEEN];
	void *pages[NROUNDS];
	size_t len = 0, nseen = 0, i;
	int round;

	(void)state;
	for (round = 0; round < NROUNDS; round++) {
		if (round > 0)
			assert_int_equal(sc_test_setup(2), 0);
		td = sc_test_spawn("stack", quick, NULL);
		len = td->td_kstack_maplen;
		for (i = 0; i < nseen; i++)
			if (seen[i] == td->td_kstack.lo)
				break;
		if (i == nseen) {
			assert_true(nseen < NSEEN);
			seen[nseen++] = td->td_kstack.lo;
		}
		assert_int_equal(sc_thread_join(td), 0);
		sc_machine_destroy(tm);
		tm = NULL;
		pages[round] = mmap(NULL, len,
		    PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		assert_true(pages[round] != MAP_FAILED);
	}
	assert_int_equal(sc_test_setup(2), 0);	/* for the teardown */
	for (round = 0; round < NROUNDS; round++)
		(void)munmap(pages[round], len);
	/* A few places in all (a machine's stacks), not one a round. */
	assert_true(nseen <= 4);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_joined_struct_is_reused,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_unjoined_struct_is_kept,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_reused_thread_captures,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_reused_ithread_never_ran,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(
		    test_concurrent_joins_release_once, sc_test_setup_2cpu,
		    sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_many_generations,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_stacks_outlive_machine,
		    sc_test_setup_2cpu, sc_test_teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
