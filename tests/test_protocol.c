/*
 * The capture protocol for running threads, one deterministic scenario per
 * path (docs/protocol.md).  Each scenario (tools/scenarios.c, the ones
 * stackcap-demo --scenario shows) makes its race happen with a hook, not
 * with timing; each test proves the path it took with the counters.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sc_test.h"
#include "sc_test_scn.h"
#include "stackcap.h"

/*
 * A capture that an IPI handler walked.  TSan runs asynchronous handlers
 * late, where the frames are not the target's loop (docs/design.md,
 * "Quality bars"): there, assert the handshake and the identity only.
 * EBUSY is returned only when the answer named the target, so it proves
 * the identity too.
 */
static void
assert_handler_capture(void)
{
#if defined(SC_SANITIZER_THREAD)
	assert_true(R.error == 0 || R.error == EBUSY);
#else
	assert_int_equal(R.error, 0);
	ASSERT_SPIN_CHAIN(&R.stack);
#endif
}

static void
test_running_capture(void **state)
{
	SKIP_UNDER_TSAN();
	run("running");
	assert_handler_capture();
	assert_int_equal(R.cnt.captures_running, 1);
	assert_int_equal(R.cnt.trace_answered, 1);
	assert_int_equal(R.cnt.retry_idle + R.cnt.retry_other +
	    R.cnt.retry_nocpu, 0);
}

static void
test_user_mode_ebusy(void **state)
{
	SKIP_UNDER_TSAN();
	run("user-mode");
	assert_int_equal(R.error, EBUSY);
	assert_int_equal(R.stack.depth, 0);
	assert_int_equal(R.cnt.ebusy, 1);
	assert_int_equal(R.cnt.captures_running, 1);
}

/* After the unlock, the target sleeps: td_oncpu is NOCPU, retry, pcb walk. */
static void
test_switch_off_after_unlock(void **state)
{
	run("switch-off");
	assert_int_equal(R.error, 0);
	SC_ASSERT_CHAIN(&R.stack, "sc_sleep", "spin_inner", "spin_outer",
	    "target_main");
	assert_int_equal(R.cnt.retry_nocpu, 1);
	assert_int_equal(R.cnt.ipis_sent, 0);
	assert_int_equal(R.cnt.captures_running, 0);
}

/* Before the IPI, the target sleeps and its CPU idles: the idle thread
 * answers, retry, then the pcb walk. */
static void
test_cpu_goes_idle(void **state)
{
	run("idle-cpu");
	assert_int_equal(R.error, 0);
	SC_ASSERT_CHAIN(&R.stack, "sc_sleep", "spin_inner");
	assert_int_equal(R.cnt.retry_idle, 1);
	assert_int_equal(R.cnt.retry_other, 0);
	assert_int_equal(R.cnt.captures_running, 0);
	assert_int_equal(R.cnt.trace_answered, 1);
}

/* One CPU: before the IPI the target yields to a hog, which the IPI hits:
 * another thread answers, retry, then the pcb walk of the queued target. */
static void
test_ipi_hits_other_thread(void **state)
{
	SKIP_UNDER_TSAN();
	run("other-thread");
	assert_int_equal(R.error, 0);
	SC_ASSERT_CHAIN(&R.stack, "sc_yield", "spin_inner");
	assert_int_equal(R.cnt.retry_other, 1);
	assert_int_equal(R.cnt.retry_offcpu, 1);
	assert_int_equal(R.cnt.captures_running, 0);
}

/* The requester reads td_oncpu while the target is inside its switch:
 * RUNNING but NOCPU.  It spins without sending an IPI. */
static void
test_nocpu_window(void **state)
{
	run("nocpu-window");
	assert_int_equal(R.error, 0);
	assert_true(R.cnt.retry_nocpu >= 1);
	assert_int_equal(R.cnt.ipis_sent, 0);
	SC_ASSERT_CHAIN(&R.stack, "sc_yield", "spin_inner");
}

/* Interrupts disabled on the target's CPU: the IPI waits for
 * spinlock_exit(), then the capture succeeds. */
static void
test_interrupts_disabled(void **state)
{
	run("interrupts-disabled");
	assert_int_equal(R.error, 0);
	SC_ASSERT_CHAIN(&R.stack, "cli_wait", "spin_inner", "spin_outer",
	    "target_main");
	assert_int_equal(R.cnt.ipis_deferred, 1);
	assert_int_equal(R.cnt.captures_running, 1);
}

/* The IPI is lost (the target's CPU blocks the signal): ETIMEDOUT within
 * the bound; the late handler then finds no open request.  Not in
 * deterministic mode, where no IPI is a signal. */
static void
test_lost_ipi_times_out(void **state)
{
	if (sc_test_env_det())
		skip();
	run("lost-ipi");
	assert_int_equal(R.error, ETIMEDOUT);
	assert_int_equal(R.stack.depth, 0);
	assert_int_equal(R.cnt.timeouts, 1);
	assert_int_equal(R.cnt.trace_answered, 0);
	assert_int_equal(R.cnt.trace_stale, 1);
}

/* The thread lock held across the IPI while the target, its chain lock
 * held, waits for it: its CPU spins with interrupts disabled, the IPI is
 * deferred, only the bound ends it. */
static void
test_lock_held_across_ipi_deadlocks(void **state)
{
	run("lock-held");
	assert_int_equal(R.error, ETIMEDOUT);
	assert_int_equal(R.cnt.ipis_deferred, 1);
	assert_int_equal(R.cnt.timeouts, 1);
	assert_int_equal(R.cnt.trace_stale, 1);
}

/* A CPU that waits for its only spin lock takes the IPI between attempts
 * (_mtx_lock_spin_cookie()): the capture succeeds, and the stack runs
 * through the wait, the function that wants the lock, and the target's
 * chain. */
static void
test_spin_wait_intr(void **state)
{
	run("spin-wait-intr");
	assert_int_equal(R.error, 0);
#if !defined(SC_SANITIZER_THREAD)
	/* TSan runs the handler late, on other frames (sc_test_scn.h). */
	SC_ASSERT_CHAIN(&R.stack, "sc__spin_lock_until", "sc_sleep",
	    "spin_outer", "target_main");
#endif
	assert_int_equal(R.cnt.timeouts, 0);
	assert_int_equal(R.cnt.captures_running, 1);
	assert_int_equal(R.cnt.trace_answered, 1);
}

/* The reviewers' catches: each fails with its mistake, not without ------ */

/* Run the scenario `name` as it is (into R), then with its mistakes, arch
 * and protocol reset: the final protocol on the same steps (into R2). */
static struct scn_result R2;

static void
run_as_is_and_fixed(const char *name)
{
	const struct scn_scenario *s = scn_find(name);
	struct scn_scenario fixed;

	assert_non_null(s);
	assert_int_equal(scn_run(s, 0, NULL, NULL, &R), 0);
	fixed = *s;
	fixed.mistakes = 0;
	fixed.arch = SC_ARCH_AMD64;
	fixed.protocol = SC_PROTO_IPI;
	fixed.flags &= ~SCN_PANICS;
	sc_set_panic_handler(sc_test_panic_record);
	sc_test_panic_reset();
	assert_int_equal(scn_run(&fixed, 0, NULL, NULL, &R2), 0);
	sc_set_panic_handler(NULL);
}

/* The same, for a scenario whose `raced` says the mistake did harm. */
static void
run_both(const char *name)
{
	run_as_is_and_fixed(name);
	assert_true(R.raced);
	assert_false(R2.raced);
}

/* kib: an answer left in the word is taken for the next capture: 0 and
 * the old stack, although the target's CPU had interrupts disabled and
 * only one handler ever answered.  Cleared, the capture times out. */
static void
test_stale_answer(void **state)
{
	SKIP_UNDER_TSAN();
	run_both("stale-answer");
	assert_int_equal(R.error, 0);
	assert_int_equal(R.cnt.trace_answered, 1);
	assert_int_equal(R.cnt.captures_running, 2);
	assert_int_equal(R2.error, ETIMEDOUT);
	assert_int_equal(R2.cnt.trace_answered, 1);
}

/* mjg: another spin lock held by the caller, needed by the target inside
 * a spinlock section: its CPU spins with interrupts disabled, the IPI is
 * deferred, the bound ends it.  Without the mistake: a KASSERT, EINVAL,
 * no IPI. */
static void
test_spin_held(void **state)
{
	run_both("spin-held");
	assert_int_equal(R.error, ETIMEDOUT);
	assert_int_equal(R.cnt.ipis_deferred, 1);
	assert_int_equal(R.cnt.trace_stale, 1);
	assert_int_equal(R2.error, EINVAL);
	assert_int_equal(R2.cnt.ipis_sent, 0);
	assert_int_equal(sc_test_panic_count(), 1);
	assert_non_null(strstr(sc_test_panic_msg(), "spin lock"));
}

/* mjg: no proc lock, the target exits while the requester waits with the
 * thread lock dropped; joined, its struct goes back to thread_zone and a
 * thread of another proc takes it.  The answer names the same pointer:
 * 0, with the new thread's stack.  Without the mistake: a KASSERT, EINVAL,
 * nothing dropped, the target's identity intact. */
static void
test_no_proc_lock(void **state)
{
	SKIP_UNDER_TSAN();
	run_both("no-proc-lock");
	assert_int_equal(R.error, 0);
	assert_int_not_equal(R.answer_tid, R.target_tid);
	SC_ASSERT_CHAIN(&R.stack, "spin_outer", "reuser_main");
	assert_int_equal(R.cnt.thread_reuses, 1);
	assert_int_equal(R.cnt.captures_running, 1);
	assert_int_equal(R.cnt.retry_idle + R.cnt.retry_other, 0);
	assert_int_equal(R2.error, EINVAL);
	assert_int_equal(R2.answer_tid, R2.target_tid);
	assert_int_equal(R2.cnt.thread_reuses, 0);
	assert_int_equal(R2.cnt.ipis_sent, 0);
	assert_int_equal(sc_test_panic_count(), 1);
	assert_non_null(strstr(sc_test_panic_msg(), "proc lock"));
}

/* mjg: no proc lock, the target sleeps and is swapped out after the
 * unlock; on the relock it is not running and its stack unmapped: the
 * KASSERT says the kernel would fault walking it.  Without the mistake:
 * the KASSERT that asks for the proc lock, before anything is dropped. */
static void
test_no_proc_lock_swap(void **state)
{
	run_both("no-proc-lock-swap");
	assert_int_equal(R.error, EINVAL);
	assert_int_equal(R.stack.depth, 0);
	assert_int_equal(R.cnt.swapouts, 1);
	assert_int_equal(R.cnt.retry_nocpu, 1);
	assert_int_equal(R.cnt.ipis_sent, 0);
	assert_non_null(strstr(R.panic, "swapped out while its thread lock "
	    "was dropped"));
	assert_non_null(strstr(R.panic, "fatal page fault"));
	assert_int_equal(R2.error, EINVAL);
	assert_int_equal(R2.cnt.swapouts, 0);
	assert_int_equal(R2.cnt.retry_nocpu, 0);
	assert_int_equal(sc_test_panic_count(), 1);
	assert_non_null(strstr(sc_test_panic_msg(), "proc lock is not held"));
}

/* bdragon, jhibbits: arm64 captures no running thread, not even itself:
 * EOPNOTSUPP and <running>; amd64 captures both. */
static void
test_arm64_running(void **state)
{
	SKIP_UNDER_TSAN();
	run_both("arm64-running");
	assert_int_equal(R.error, EOPNOTSUPP);
	assert_int_equal(R.stack.depth, 0);
	assert_int_equal(R.cnt.ipis_sent, 0);
	assert_int_equal(R2.error, 0);
	ASSERT_SPIN_CHAIN(&R2.stack);
}

/* The schedulers and protocols of the history ---------------------------- */

/* ULE's window: the incoming target is RUNNING, td_oncpu NOCPU, its lock
 * free.  The final protocol spins (no IPI to NOCPU) until the target sets
 * td_oncpu itself, then captures it with one IPI. */
static void
test_ule_incoming_nocpu(void **state)
{
	SKIP_UNDER_TSAN();
	run("ule-incoming-nocpu");
	assert_int_equal(R.error, 0);
	ASSERT_SPIN_CHAIN(&R.stack);
	assert_true(R.cnt.retry_nocpu >= 1);
	assert_int_equal(R.cnt.ipis_sent, 1);
	assert_int_equal(R.cnt.trace_answered, 1);
	assert_int_equal(R.cnt.timeouts, 0);
}

/* FreeBSD 12's protocol under 4BSD: the sched_lock keeps a running thread
 * on its CPU, so the NMI finds it; with interrupts disabled the NMI is
 * still taken (nothing deferred) and answers depth 0: EAGAIN. */
static void
test_nmi_4bsd(void **state)
{
	SKIP_UNDER_TSAN();
	run("nmi-4bsd");
	assert_int_equal(R.error, 0);
	ASSERT_SPIN_CHAIN(&R.stack);
	assert_int_equal(R.error2, EAGAIN);
	assert_int_equal(R.cnt.nmis_sent, 2);
	assert_int_equal(R.cnt.nmis_answered, 2);
	assert_int_equal(R.cnt.nmi_eagain, 1);
	assert_int_equal(R.cnt.ipis_deferred, 0);
	assert_int_equal(R.cnt.trace_answered, 0);
}

/* An NMI that lands in user mode answers depth 0 too: EAGAIN, where the
 * final protocol says EBUSY. */
static void
test_nmi_user_mode(void **state)
{
	const struct scn_scenario *s = scn_find("user-mode");
	struct scn_scenario nmi;

	SKIP_UNDER_TSAN();
	assert_non_null(s);
	nmi = *s;
	nmi.protocol = SC_PROTO_NMI;
	nmi.sched = SCN_SCHED_4BSD;
	assert_int_equal(scn_run(&nmi, 0, NULL, NULL, &R), 0);
	assert_int_equal(R.error, EAGAIN);
	assert_int_equal(R.stack.depth, 0);
	assert_int_equal(R.cnt.nmi_eagain, 1);
	assert_int_equal(R.cnt.ebusy, 0);
}

/* FreeBSD 12's protocol under FreeBSD 13's ULE, in the same window:
 * RUNNING, NOCPU, under the thread lock: 12 would ipi_cpu(NOCPU), which
 * reads the word before cpu_apic_ids[] (a panic, an NMI to some CPU, a
 * hang: that word decides).  The KASSERT says so, nothing is sent.
 * The final protocol on the same steps captures the target. */
static void
test_nmi_ule(void **state)
{
	SKIP_UNDER_TSAN();
	run_as_is_and_fixed("nmi-ule");
	assert_true(R.raced);
	assert_true(R2.raced);		/* the window was held for both */
	assert_int_equal(R.error, EINVAL);
	assert_int_equal(R.cnt.nmis_sent, 0);
	assert_int_equal(R.cnt.ipis_sent, 0);
	assert_non_null(strstr(R.panic, "td_oncpu == NOCPU"));
	assert_non_null(strstr(R.panic, "for ever"));
	assert_int_equal(R2.error, 0);
	ASSERT_SPIN_CHAIN(&R2.stack);
	assert_true(R2.cnt.retry_nocpu >= 1);
	assert_int_equal(sc_test_panic_count(), 0);
}

/*
 * stack_nmi_handler()'s identity check ("Don't consume an NMI that wasn't
 * meant for us"): an NMI that lands on a CPU running another thread while
 * a request for the target is pending must not answer for the target.
 * FreeBSD 12 meets such NMIs from other sources (its trap() offers
 * stack_nmi_handler() every NMI that the stop IPI and hwpmc did not take);
 * here the NMI is a late one: a capture of the
 * blocker, whose CPU pthread blocks the IPI signal, timed out and left its
 * NMI pending there.  The hook of the target's capture, with the request
 * for the target published, lets the blocker unblock the signal and waits
 * until the late NMI, on cpu0, which runs the blocker, was declined.  The
 * target's own NMI then reaches cpu1 and answers, as in FreeBSD 12: 0 with
 * the target's stack.  Without the check, cpu0 would answer with the
 * blocker's stack, and the capture would return it as the target's.
 */
struct nmi_other {
	struct sc_machine *m;
	int		cpu;
	int		signo;		/* the blocker's: the IPI signal */
	atomic_int	running;
	atomic_int	unblock;	/* set by the hook */
	atomic_int	release;
};

SC_NOIPA static void
nmi_other_here(void *arg)
{
	struct nmi_other *b = arg;
	sigset_t set;

	(void)sc_sched_bind(b->cpu);
	sigemptyset(&set);
	if (b->signo != 0)
		sigaddset(&set, b->signo);
	(void)pthread_sigmask(SIG_BLOCK, &set, NULL);
	atomic_store(&b->running, 1);
	while (b->signo != 0 && !atomic_load(&b->unblock))
		SC_BARRIER();
	(void)pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	/* Polls for signals, where a sanitizer defers them. */
	while (!atomic_load(&b->release))
		sc_maybe_yield();
}

SC_CHAIN(nmi_blocker_outer, nmi_other_here)
SC_CHAIN(nmi_target_outer, nmi_other_here)

/* A 2-CPU machine of FreeBSD 12's protocol, bounded at ms. */
static struct sc_machine *
nmi_machine(struct sc_machine_config *cfg, bool ule, long ms)
{
	struct sc_machine *m = NULL;

	sc_machine_config_init(cfg);
	cfg->ncpu = 2;
	if (ule)
		cfg->sched = SC_SCHED_ULE;
	cfg->protocol = SC_PROTO_NMI;
	cfg->capture_timeout_ns = ms * 1000 * 1000;
	assert_int_equal(sc_machine_create(cfg, &m), 0);
	return (m);
}

/* The target's request is published: let the late NMI in, and wait
 * (bounded: the assertions fail if it expires) until cpu0 declined it. */
static void
nmi_other_hook(void *arg, enum sc_hook_point point, struct sc_thread *td)
{
	struct nmi_other *b = arg;
	struct sc_deadline dl;

	(void)td;
	if (point != SC_HOOK_SAVE_BEFORE_IPI)
		return;
	atomic_store(&b->unblock, 1);
	sc_test_deadline_start(&dl, SC_TEST_TIMEOUT_MS);
	while (SC_COUNTER(b->m, trace_stale) == 0 &&
	    !sc_deadline_passed(&dl))
		SC_BARRIER();
}

static void
test_nmi_lands_on_other_thread(void **state)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	struct sc_proc *p;
	struct sc_thread *tb, *tt;
	struct nmi_other b = { .cpu = 0 }, t = { .cpu = 1 };
	struct sc_counters c;
	struct sc_stack st;
	int error;

	(void)state;
	if (sc_test_env_det())
		skip();		/* its late NMI is a blocked signal */
	/* The hook's wait eats the target's bound: 1 s leaves room. */
	m = nmi_machine(&cfg, false, 1000);
	assert_int_equal(sc_proc_create(m, "p", &p), 0);
	b.signo = cfg.ipi_signo;
	b.m = m;
	assert_int_equal(sc_thread_create(p, "blocker", nmi_blocker_outer, &b,
	    &tb), 0);
	assert_int_equal(sc_thread_create(p, "target", nmi_target_outer, &t,
	    &tt), 0);
	SC_WAIT_FOR(atomic_load(&b.running) && atomic_load(&t.running) &&
	    sc_thread_oncpu(tb) == 0 && sc_thread_oncpu(tt) == 1);
	/* The blocker's NMI stays pending on cpu0: the capture gives up. */
	assert_int_equal(sc_stack_save_td_locked(p, tb, &st), ETIMEDOUT);
	c = sc_counters_get(m);
	assert_int_equal(c.nmis_sent, 1);
	assert_int_equal(c.nmis_answered, 0);
	assert_int_equal(c.trace_stale, 0);
	sc_machine_set_hook(m, nmi_other_hook, &b);
	error = sc_stack_save_td_locked(p, tt, &st);
	sc_machine_set_hook(m, NULL, NULL);
	atomic_store(&b.unblock, 1);
	assert_int_equal(error, 0);
	SC_ASSERT_CHAIN(&st, "nmi_target_outer");
	assert_false(sc_test_stack_has_chain(&st,
	    (const char *const[]){ "nmi_blocker_outer" }, 1));
	c = sc_counters_get(m);
	assert_int_equal(c.nmis_sent, 2);
	assert_int_equal(c.nmis_answered, 1);	/* cpu1, for the target */
	assert_int_equal(c.trace_stale, 1);	/* cpu0's, declined */
	assert_int_equal(c.timeouts, 1);	/* the blocker's capture */
	atomic_store(&b.release, 1);
	atomic_store(&t.release, 1);
	assert_int_equal(sc_thread_join(tb), 0);
	assert_int_equal(sc_thread_join(tt), 0);
	sc_machine_destroy(m);
}

/*
 * FreeBSD 12 takes nmi_lock with mtx_lock_spin(), without bound.  Here a
 * second requester gives up at its own bound while the first holds
 * nmi_lock (its hook waits for the second to return, bounded; the first
 * may then time out too): ETIMEDOUT, no NMI sent.  ULE: under 4BSD both
 * targets' thread locks are the one sched_lock, and the second requester
 * would wait for it, in its own thread_lock() call, before the capture.
 */
struct nmi_second {
	struct sc_proc	*p;
	struct sc_thread *td;
	int		error;
	atomic_int	started;
	atomic_int	done;
};

static void *
nmi_second_main(void *arg)
{
	struct nmi_second *r = arg;
	struct sc_stack st;

	atomic_store(&r->started, 1);
	r->error = sc_stack_save_td_locked(r->p, r->td, &st);
	atomic_store(&r->done, 1);
	return (NULL);
}

static void
nmi_lock_hook(void *arg, enum sc_hook_point point, struct sc_thread *td)
{
	struct nmi_second *r = arg;
	struct sc_deadline dl;
	pthread_t pt;

	(void)td;
	if (point != SC_HOOK_SAVE_BEFORE_IPI || atomic_load(&r->started))
		return;
	if (pthread_create(&pt, NULL, nmi_second_main, r) != 0)
		return;
	sc_test_deadline_start(&dl, SC_TEST_TIMEOUT_MS);
	/* A point at each turn: in deterministic mode the second requester
	 * runs only when this pthread lets it. */
	while (!atomic_load(&r->done) && !sc_deadline_passed(&dl))
		sc_maybe_yield();
	(void)pthread_detach(pt);
}

static void
test_nmi_lock_wait_bounded(void **state)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	struct sc_proc *p1, *p2;
	struct sc_thread *t1;
	struct nmi_other a = { .cpu = 0 }, b = { .cpu = 1 };
	struct nmi_second r;
	struct sc_stack st;
	int error;

	(void)state;
	m = nmi_machine(&cfg, true, 200);
	assert_int_equal(sc_proc_create(m, "p1", &p1), 0);
	assert_int_equal(sc_proc_create(m, "p2", &p2), 0);
	memset(&r, 0, sizeof(r));
	r.p = p2;
	assert_int_equal(sc_thread_create(p1, "first", nmi_target_outer, &a,
	    &t1), 0);
	assert_int_equal(sc_thread_create(p2, "second", nmi_target_outer, &b,
	    &r.td), 0);
	SC_WAIT_FOR(atomic_load(&a.running) && atomic_load(&b.running) &&
	    sc_thread_oncpu(t1) == 0 && sc_thread_oncpu(r.td) == 1);
	sc_machine_set_hook(m, nmi_lock_hook, &r);
	error = sc_stack_save_td_locked(p1, t1, &st);
	sc_machine_set_hook(m, NULL, NULL);
	/* The second returned while the first held nmi_lock. */
	assert_int_equal(atomic_load(&r.done), 1);
	assert_int_equal(r.error, ETIMEDOUT);
	assert_int_equal(SC_COUNTER(m, nmis_sent), 1);
	/* The first spent its bound in the hook: its NMI may come late. */
	assert_true(error == 0 || error == ETIMEDOUT);
	if (error == 0)
		SC_ASSERT_CHAIN(&st, "nmi_target_outer");
	atomic_store(&a.release, 1);
	atomic_store(&b.release, 1);
	assert_int_equal(sc_thread_join(t1), 0);
	assert_int_equal(sc_thread_join(r.td), 0);
	sc_machine_destroy(m);
}

/* A running target that never calls the library ------------------------- */

/*
 * Spins on atomic loads alone: no call into the library, so no poll point.
 * Under TSan the IPI's handler then runs at one of these loads (TSan takes
 * pending signals at its atomic operations too), where no poll frame was
 * left: it walked from its own frame and returned one frame inside TSan's
 * runtime (seen in CI: test_misuse's nested capture, about one run in 40
 * at load 10, once the clock's ticks, taken at such loads, carried the
 * IPI).  It now walks from the interrupted frame, found from the arrival's
 * registers (src/ipi_sim.c, sc_tsan_arrival_fp()).  Elsewhere the signal
 * interrupts the loop itself: the same stack.
 */
SC_NOIPA static void
bare_spin(void *arg)
{
	struct hold *b = arg;

	(void)sc_sched_bind(1);
	atomic_store(&b->holding, 1);
	while (!atomic_load(&b->release))
		;
	SC_BARRIER();
}
SC_CHAIN(bare_outer, bare_spin)

static void
test_running_no_calls(void **state)
{
	struct hold b = { 0 };
	struct sc_thread *td;
	struct sc_stack st;
	int i;

	(void)state;
	td = sc_test_spawn("bare", bare_outer, &b);
	SC_WAIT_FOR(atomic_load(&b.holding));
	SC_WAIT_STATE(td, SC_TDS_RUNNING, 0);
	for (i = 0; i < 20; i++) {
		assert_int_equal(sc_stack_save_td_locked(tp, td, &st), 0);
		SC_ASSERT_CHAIN(&st, "bare_outer");
	}
	atomic_store(&b.release, 1);
	assert_int_equal(sc_thread_join(td), 0);
}

/* Misuse ---------------------------------------------------------------- */

static _Atomic int spin_stop;

static void
spinner(void *arg)
{
	while (!atomic_load(&spin_stop))
		sc_maybe_yield();
}

static int
setup(void **state)
{
	atomic_store(&spin_stop, 0);
	return (sc_test_setup_2cpu(state));
}

static int
teardown(void **state)
{
	atomic_store(&spin_stop, 1);
	return (sc_test_teardown(state));
}

static void
test_running_without_proc_lock_asserts(void **state)
{
	struct sc_thread *td;
	struct sc_stack st;

	assert_int_equal(sc_thread_create(tp, "nolock", spinner, NULL, &td), 0);
	SC_WAIT_STATE(td, SC_TDS_RUNNING, 0);
	sc_set_panic_handler(sc_test_panic_cmocka);
	sc_thread_lock(td);
	expect_assert_failure(sc_stack_save_td(&st, td));
	sc_thread_unlock(td);
	sc_set_panic_handler(NULL);
	assert_int_equal(SC_COUNTER(tm, ipis_sent), 0);
}

static void
test_swapped_asserts(void **state)
{
	struct sc_thread *td;
	struct sc_stack st;

	assert_int_equal(sc_thread_create(tp, "swapped", spinner, NULL, &td),
	    0);
	SC_WAIT_STATE(td, SC_TDS_RUNNING, 0);
	atomic_store(&spin_stop, 1);
	assert_int_equal(sc_thread_join(td), 0);
	/* An exited thread cannot be swapped: use a sleeper instead. */
	assert_int_equal(sc_ithread_create(tp, "iwait", spinner, NULL, &td), 0);
	assert_int_equal(sc_thread_swapout(td), 0);
	sc_set_panic_handler(sc_test_panic_cmocka);
	sc_proc_lock(tp);
	sc_thread_lock(td);
	expect_assert_failure(sc_stack_save_td(&st, td));
	sc_thread_unlock(td);
	sc_proc_unlock(tp);
	sc_set_panic_handler(NULL);
	assert_int_equal(sc_thread_swapin(td), 0);
	assert_int_equal(sc_ithread_schedule(td), 0);
	assert_int_equal(sc_thread_join(td), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_running_capture),
		cmocka_unit_test(test_user_mode_ebusy),
		cmocka_unit_test(test_switch_off_after_unlock),
		cmocka_unit_test(test_cpu_goes_idle),
		cmocka_unit_test(test_ipi_hits_other_thread),
		cmocka_unit_test(test_nocpu_window),
		cmocka_unit_test(test_interrupts_disabled),
		cmocka_unit_test(test_lost_ipi_times_out),
		cmocka_unit_test(test_lock_held_across_ipi_deadlocks),
		cmocka_unit_test(test_spin_wait_intr),
		cmocka_unit_test(test_stale_answer),
		cmocka_unit_test(test_spin_held),
		cmocka_unit_test(test_no_proc_lock),
		cmocka_unit_test(test_no_proc_lock_swap),
		cmocka_unit_test(test_arm64_running),
		cmocka_unit_test(test_ule_incoming_nocpu),
		cmocka_unit_test(test_nmi_4bsd),
		cmocka_unit_test(test_nmi_user_mode),
		cmocka_unit_test(test_nmi_ule),
		cmocka_unit_test(test_nmi_lands_on_other_thread),
		cmocka_unit_test(test_nmi_lock_wait_bounded),
		cmocka_unit_test_setup_teardown(test_running_no_calls, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    test_running_without_proc_lock_asserts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_swapped_asserts, setup,
		    teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
