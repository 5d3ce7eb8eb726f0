/*
 * libFuzzer harness for the whole machine, in deterministic mode.
 *
 * The input is a machine, a sequence of operations, and the scheduling
 * choices: the harness is a body of sc_check_fuzz() (stackcap/check.h),
 * which takes every choice of the deterministic machine from the bytes
 * after the operations, so that libFuzzer's coverage guidance explores
 * interleavings as it explores operations, and a finding replays from its
 * input (or from the schedule sc_check_fuzz() prints).  After
 * each operation the invariants are checked, and a broken one aborts:
 * - a capture that returns 0 holds its target's own call chain and no
 *   other thread's (fm_chain0..2 tell them apart), and the thread is the
 *   one asked for (its struct's generation did not change meanwhile);
 * - no capture times out while its target stands still (a deadlock; the
 *   bound is virtual: 20,000 steps), see fm_deadlock(); no listing
 *   (kern.proc.kstack, a snapshot) times out while the machine makes no
 *   capture, see fm_listing();
 * - at the end, the counters agree with the operations (exits, and the
 *   structs allocated or reused against the threads created);
 * - no wait of the harness passes its bound of steps (no hang).
 * A KASSERT aborts too (sc_check_fuzz() reports it as the run's failure):
 * the harness never misuses the API on purpose.
 *
 * Input layout:
 *   0      u8   flags: bit 7 enables the mistakes of bits 0-1:
 *               bit 0 SC_MISTAKE_HOLD_THREAD_LOCK, bit 1
 *               SC_MISTAKE_NO_PROC_LOCK (ignored when the environment
 *               has FM_FINAL)
 *   1      u8   CPUs: 1 + b % 3
 *   2      u8   n: the operations, b % (MAX_OPS + 1)
 *   3      then n {u8 op, u8 arg} pairs (fewer if the input ends)
 *   3 + 2n then the scheduling choices, a byte each (sc_check_fuzz())
 *
 * The operations (op % NOPS; t = arg % MAX_THREADS, a slot):
 *   CREATE    a thread in slot t, in chain arg % 3, if the slot is free
 *   SLEEP     t sleeps on its channel       WAKE   t is woken
 *   EXIT      t returns; the harness joins it (its struct may be reused)
 *   CAPTURE   the harness captures t, proc lock and thread lock held
 *   SIMCAP    t captures slot (arg / 8) % MAX_THREADS, from a simulated
 *             thread, without the proc lock if NO_PROC_LOCK is enabled
 *   SWAPOUT, SWAPIN t    YIELD  the harness yields arg % 8 times
 *   KSTACK    kern.proc.kstack of t's process; with arg >= 128, a
 *             snapshot of the whole machine (sc_machine_snapshot()),
 *             each slot's entry checked as a capture is
 *
 * The harness's captures and its snapshots run while the slots' threads
 * capture (SIMCAP): with per-CPU request slots, they overlap.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stackcap.h"
#include "stackcap/check.h"
#include "stackcap/testing.h"

#define MAX_THREADS	6
#define MAX_OPS		48
#define WAIT_STEPS	100000
#define FM_STARVE	2000	/* see FM_WAIT() */
#define HDR		3

enum { OP_CREATE, OP_SLEEP, OP_WAKE, OP_EXIT, OP_CAPTURE, OP_SIMCAP,
	OP_SWAPOUT, OP_SWAPIN, OP_YIELD, OP_KSTACK, NOPS };
enum { CMD_SPIN, CMD_SLEEP, CMD_EXIT, CMD_CAPTURE };

struct fm_slot {
	struct sc_thread *td;		/* NULL: free */
	struct sc_proc	*proc;
	int		chain;
	unsigned	gen;
	atomic_int	cmd;		/* CMD_* */
	atomic_int	entered;	/* 1: in its chain (fm_body runs) */
	atomic_int	leaving;	/* 1: out of its chain, exiting */
	/* SIMCAP: the target as it was asked for (its struct may be reused
	 * meanwhile), and the result the harness checks. */
	struct fm_slot	*want;
	struct sc_thread *want_td;
	atomic_int	*want_entered, *want_leaving;
	struct sc_proc	*want_proc;
	unsigned	want_gen;
	int		want_chain;
	atomic_int	capbusy;	/* 1: inside a capture */
	atomic_int	capdone;	/* 1: results to check */
	bool		captimeout;	/* sticky: ETIMEDOUT */
	bool		capwrong;	/* sticky: 0 but not the chain */
	bool		capother;	/* sticky: 0 but another thread */
};

static struct fm_state {
	struct sc_machine *m;
	struct sc_proc	*procs[3];
	struct fm_slot	slot[MAX_THREADS];
	bool		no_proc_lock;
	unsigned long	creates, exits;
} fm;

static void
fm_fail(const char *what)
{
	fprintf(stderr, "fuzz_machine: %s\n", what);
	/* FM_TRACE=1: the narrated trace of the run, to see why. */
	if (getenv("FM_TRACE") != NULL)
		(void)sc_trace_print(fm.m, stderr);
	abort();
}

/*
 * Progress of the machine's captures so far: retries (a capture whose
 * target kept moving) and captures answered by an IPI, every caller's.
 */
static uint64_t
fm_progress(void)
{
	struct sc_counters c;

	sc_machine_counters(fm.m, &c);
	return (c.retry_nocpu + c.retry_idle + c.retry_other +
	    c.captures_running);
}

/*
 * ETIMEDOUT is a deadlock when the machine's captures made no progress
 * meanwhile: no retry and no answer.  With retries, the target kept
 * switching in and out of the window that the protocol retries on: the
 * protocol promises no progress there (the kernel's loop is unbounded),
 * and an adversarial chooser (PCT on one CPU) can keep it in phase until
 * the bound.  With answers, another requester kept taking the target
 * CPU's request slot each time it came free: no lock here promises
 * fairness, nor does the kernel's (intr_lock, an MTX_DEF mutex, in
 * sys/x86/x86/stack_machdep.c).
 * That is starvation, not a finding.
 */
static bool
fm_deadlock(int error, uint64_t progress0)
{
	return (error == ETIMEDOUT && fm_progress() == progress0);
}

/* Captures of the machine so far, every caller's. */
static uint64_t
fm_captures(void)
{
	struct sc_counters c;

	sc_machine_counters(fm.m, &c);
	return (c.captures);
}

/*
 * A listing (kern.proc.kstack, a snapshot) bounds its proc-lock waits
 * too.  ETIMEDOUT is a deadlock when the machine made no capture
 * meanwhile.  Slots told to SIMCAP capture again and again, each time
 * under the proc lock of their target: a listing that waits for that
 * lock can find it taken at each of its turns until the bound (the lock
 * is not fair, nor is the kernel's mutex).  Captures that went on while
 * it waited are starvation, not a finding.
 */
static void
fm_listing(const char *what, int error, uint64_t captures0)
{
	if (error == 0)
		return;
	if (error == ETIMEDOUT && fm_captures() != captures0)
		return;
	fprintf(stderr, "fuzz_machine: %s: %s\n", what, strerror(error));
	fm_fail(error == ETIMEDOUT ? "a listing timed out, no capture "
	    "meanwhile (a deadlock)" : "a listing failed");
}

/* The chain of a return address: 0..2 inside fm_chain0..2, -1 elsewhere
 * (sc_symbolize() keeps its answers: the harness's own cache of them, 9x
 * on the corpus before the library had one, is gone). */
static int
fm_pc_chain(uintptr_t pc)
{
	char name[64];
	uintptr_t off;

	if (sc_symbolize(pc, name, sizeof(name), &off) == 0 &&
	    strncmp(name, "fm_chain", 8) == 0)
		return (name[8] - '0');
	return (-1);
}

/* Does st hold chain k's marker, and no other chain's? */
static bool
fm_chain_ok(const struct sc_stack *st, int k)
{
	bool mine = false;
	int i, c;

	for (i = 0; i < st->depth; i++) {
		if ((c = fm_pc_chain(st->pcs[i])) < 0)
			continue;
		if (c != k)
			return (false);
		mine = true;
	}
	return (mine);
}

/*
 * A capture by a slot's thread of the target s was given; false once the
 * target is gone (exited, its struct maybe reused) or swapped.
 */
static bool
fm_simcap(struct fm_slot *s)
{
	struct sc_thread *td = s->want_td;
	struct sc_stack st;
	uint64_t r0;
	unsigned g0;
	int error;
	bool in;

	r0 = fm_progress();
	if (!fm.no_proc_lock)
		sc_proc_lock(s->want_proc);
	sc_thread_lock(td);
	g0 = sc_thread_gen(td);
	in = atomic_load(s->want_entered);
	if (g0 != s->want_gen ||
	    (sc_thread_inhibitors(td) & SC_TDI_SWAPPED) != 0)
		error = -1;		/* gone or swapped: nothing to ask */
	else
		error = sc_stack_save_td(&st, td);
	if (fm_deadlock(error, r0))
		s->captimeout = true;
	/*
	 * The chain is there from fm_body()'s start (entered, before the
	 * capture) to its end (leaving, after): a thread that has not
	 * reached its function yet, or exits (thread_exit() waits for the
	 * proc lock that we hold), has no chain.  Both flags only go to 1.
	 */
	if (error == 0 && st.depth > 0 && in &&
	    !atomic_load(s->want_leaving) &&
	    !fm_chain_ok(&st, s->want_chain))
		s->capwrong = true;
	if (error == 0 && sc_thread_gen(td) != g0)
		s->capother = true;
	sc_thread_unlock(td);
	if (!fm.no_proc_lock)
		sc_proc_unlock(s->want_proc);
	atomic_store(&s->capdone, 1);
	return (error != -1);
}

/* A slot told to SIMCAP is told to spin instead: true if it was told. */
static bool
fm_stop_simcap(struct fm_slot *s)
{
	int cmd = CMD_CAPTURE;

	return (atomic_compare_exchange_strong(&s->cmd, &cmd, CMD_SPIN));
}

static SC_NOIPA void
fm_body(struct fm_slot *s)
{
	int cmd;

	atomic_store(&s->entered, 1);
	for (;;) {
		cmd = atomic_load(&s->cmd);
		if (cmd == CMD_EXIT) {
			atomic_store(&s->leaving, 1);
			break;
		}
		if (cmd == CMD_SLEEP)
			sc_sleep(s, "fzsleep");
		else if (cmd == CMD_CAPTURE) {
			/* Again and again, until told or the target goes. */
			atomic_store(&s->capbusy, 1);
			if (!fm_simcap(s))
				(void)fm_stop_simcap(s);
			atomic_store(&s->capbusy, 0);
			sc_maybe_yield();
		} else
			sc_maybe_yield();
	}
	SC_BARRIER();
}

static SC_NOIPA void
fm_chain0(void *arg)
{
	fm_body(arg);
	SC_BARRIER();
}

static SC_NOIPA void
fm_chain1(void *arg)
{
	fm_body(arg);
	SC_BARRIER();
}

static SC_NOIPA void
fm_chain2(void *arg)
{
	fm_body(arg);
	SC_BARRIER();
}

static void (*const fm_chains[3])(void *) = { fm_chain0, fm_chain1,
    fm_chain2 };

/*
 * Tell every slot that captures again and again to stop (it finishes the
 * capture it is in).  See FM_WAIT().
 */
static void
fm_quiesce(void)
{
	int i;

	for (i = 0; i < MAX_THREADS; i++)
		if (fm.slot[i].td != NULL)
			(void)fm_stop_simcap(&fm.slot[i]);
}

/*
 * Poll cond at scheduling points; abort past the bound (a hang).  Slots
 * that SIMCAP in a loop take their targets' proc locks one after the
 * other, and a thread that waits for one of those locks (to exit, or to
 * finish its own capture) can find it taken each time it is woken: the
 * proc lock, as the kernel's MTX_DEF mutex (__mtx_unlock_sleep() in
 * sys/kern/kern_mutex.c releases the lock, then wakes), hands nothing to
 * the thread it wakes.  Such a convoy under the default schedule lasted
 * 60,899 polls (1.2 million steps) in one input and never ended in
 * another (fuzz/corpus/machine/convoy-longer-than-decision-bound,
 * exit-starved-by-simcap).  So after FM_STARVE polls with captures made
 * meanwhile, the loops are told to stop; the bound stays WAIT_STEPS.
 */
#define FM_WAIT(cond, what) do {					\
	uint64_t fm_c_ = fm_captures();					\
	long fm_n_;							\
									\
	for (fm_n_ = 0; !(cond); fm_n_++) {				\
		if (fm_n_ == FM_STARVE && fm_captures() != fm_c_)	\
			fm_quiesce();					\
		if (fm_n_ == WAIT_STEPS)				\
			fm_fail("hang: " what);				\
		sc_maybe_yield();					\
	}								\
} while (0)

static bool
fm_asleep(const struct fm_slot *s)
{
	return (sc_thread_state(s->td) == SC_TDS_INHIBITED &&
	    (sc_thread_inhibitors(s->td) & SC_TDI_SLEEPING) != 0);
}

/* A SIMCAP result, once there: check it. */
static void
fm_check_simcap(struct fm_slot *s)
{
	if (!atomic_exchange(&s->capdone, 0))
		return;
	if (s->captimeout)
		fm_fail("a capture from a simulated thread timed out, its "
		    "target still (a deadlock)");
	if (s->capother)
		fm_fail("misattribution: a capture returned 0 with the stack "
		    "of the thread that took its target's struct");
	if (s->capwrong)
		fm_fail("a capture from a simulated thread returned 0 "
		    "without its target's chain");
}

/* Make s's thread spin (from sleep, or from a capture it makes). */
static void
fm_wake(struct fm_slot *s)
{
	if (fm_stop_simcap(s))
		FM_WAIT(atomic_load(&s->capbusy) == 0, "simcap");
	fm_check_simcap(s);
	if (atomic_load(&s->cmd) != CMD_SLEEP)
		return;
	/* Wake only a sleeper that is asleep: no lost wakeup. */
	(void)sc_thread_swapin(s->td);
	FM_WAIT(fm_asleep(s), "sleeper not asleep");
	atomic_store(&s->cmd, CMD_SPIN);
	sc_wakeup(s);
}

static void
fm_capture(struct fm_slot *s)
{
	struct sc_stack st;
	uint64_t r0 = fm_progress();
	int error;
	bool in;

	sc_proc_lock(s->proc);
	sc_thread_lock(s->td);
	in = atomic_load(&s->entered);	/* see fm_simcap() */
	if ((sc_thread_inhibitors(s->td) & SC_TDI_SWAPPED) != 0) {
		sc_thread_unlock(s->td);
		sc_proc_unlock(s->proc);
		return;
	}
	error = sc_stack_save_td(&st, s->td);
	sc_thread_unlock(s->td);
	sc_proc_unlock(s->proc);
	if (fm_deadlock(error, r0))
		fm_fail("a capture timed out, its target still (a deadlock)");
	if (error == ETIMEDOUT)
		return;			/* starved: see fm_deadlock() */
	if (error == 0 && st.depth > 0 && in && !atomic_load(&s->leaving) &&
	    !fm_chain_ok(&st, s->chain))
		fm_fail("a capture returned 0 without its target's chain");
	if (error != 0 && error != EBUSY)
		fm_fail("a capture failed");
}

/*
 * A snapshot of the machine: each slot whose thread was in its chain
 * before and still is after must have its chain in its entry, if the
 * entry has frames (a running thread with no kernel frame chain has
 * none).
 */
static void
fm_snapshot(void)
{
	struct sc_kstack ks[3 * MAX_THREADS + 4];
	bool in[MAX_THREADS];
	struct fm_slot *s;
	uint64_t c0;
	size_t i, n;
	int error, k;

	for (k = 0; k < MAX_THREADS; k++)
		in[k] = fm.slot[k].td != NULL &&
		    atomic_load(&fm.slot[k].entered);
	c0 = fm_captures();
	error = sc_machine_snapshot(fm.m, ks, sizeof(ks) / sizeof(ks[0]), &n);
	fm_listing("sc_machine_snapshot", error, c0);
	/* On ETIMEDOUT too, the entries that were taken are checked. */
	for (i = 0; i < n && i < sizeof(ks) / sizeof(ks[0]); i++) {
		for (k = 0; k < MAX_THREADS; k++) {
			s = &fm.slot[k];
			if (s->td != NULL && sc_thread_tid(s->td) == ks[i].tid)
				break;
		}
		if (k == MAX_THREADS || !in[k] || atomic_load(&s->leaving) ||
		    ks[i].state != SC_KKST_STATE_STACKOK ||
		    ks[i].stack.depth == 0)
			continue;
		if (!fm_chain_ok(&ks[i].stack, s->chain))
			fm_fail("a snapshot's entry without its thread's "
			    "chain");
	}
}

static void
fm_op(int op, int arg)
{
	struct fm_slot *s = &fm.slot[arg % MAX_THREADS], *w;
	struct sc_kstack ks[2 * MAX_THREADS];
	uint64_t c0;
	size_t n;
	int i;

	if (op != OP_CREATE && op != OP_YIELD && s->td == NULL)
		return;
	switch (op) {
	case OP_CREATE:
		if (s->td != NULL)
			return;
		s->chain = arg % 3;
		s->proc = fm.procs[(arg / 3) % 3];
		atomic_store(&s->cmd, CMD_SPIN);
		atomic_store(&s->entered, 0);
		atomic_store(&s->leaving, 0);
		if (sc_thread_create(s->proc, "fz", fm_chains[s->chain], s,
		    &s->td) != 0)
			fm_fail("sc_thread_create");
		s->gen = sc_thread_gen(s->td);
		fm.creates++;
		break;
	case OP_SLEEP:
		fm_wake(s);
		atomic_store(&s->cmd, CMD_SLEEP);
		break;
	case OP_WAKE:
		fm_wake(s);
		break;
	case OP_EXIT:
		/* A thread that captures s goes on: with the proc lock, s
		 * waits for it to exit; without, the race is the point. */
		fm_wake(s);
		atomic_store(&s->cmd, CMD_EXIT);
		/* Bounded first: sc_thread_join() waits as long as it takes. */
		FM_WAIT(sc_thread_exited(s->td), "exit");
		if (sc_thread_join(s->td) != 0)
			fm_fail("sc_thread_join");
		s->td = NULL;
		fm.exits++;
		break;
	case OP_CAPTURE:
		fm_capture(s);
		break;
	case OP_SIMCAP:
		w = &fm.slot[(arg / 8) % MAX_THREADS];
		if (w == s || w->td == NULL)
			return;
		fm_wake(s);
		s->want = w;
		s->want_td = w->td;
		s->want_entered = &w->entered;
		s->want_leaving = &w->leaving;
		s->want_proc = w->proc;
		s->want_gen = w->gen;
		s->want_chain = w->chain;
		atomic_store(&s->cmd, CMD_CAPTURE);
		break;
	case OP_SWAPOUT:
		if (atomic_load(&s->cmd) == CMD_SLEEP && fm_asleep(s))
			(void)sc_thread_swapout(s->td);
		break;
	case OP_SWAPIN:
		(void)sc_thread_swapin(s->td);
		break;
	case OP_YIELD:
		for (i = 0; i < arg % 8; i++)
			sc_maybe_yield();
		break;
	case OP_KSTACK:
		if (arg >= 128)
			fm_snapshot();
		else {
			c0 = fm_captures();
			fm_listing("sc_proc_kstack", sc_proc_kstack(s->proc, ks,
			    2 * MAX_THREADS, &n), c0);
		}
		break;
	}
	for (i = 0; i < MAX_THREADS; i++)
		if (fm.slot[i].td != NULL)
			fm_check_simcap(&fm.slot[i]);
}

/* The operations part of an input, for fm_run(). */
struct fm_input {
	const uint8_t	*data;
	size_t		nops;
};

/* The run: a body of sc_check_fuzz(), its machine from cfg. */
static int
fm_run(const struct sc_machine_config *ccfg, void *arg)
{
	const struct fm_input *in = arg;
	const uint8_t *data = in->data;
	struct sc_machine_config cfg = *ccfg;
	struct sc_counters c;
	size_t i;

	memset(&fm, 0, sizeof(fm));
	cfg.ncpu = 1 + data[1] % 3;
	cfg.capture_timeout_ns = 20L * 1000 * 1000;
	if (getenv("FM_TRACE") != NULL)
		cfg.trace_events = 1 << 16;
	/* FM_FINAL=1: the final protocol only, whatever the flags say. */
	if ((data[0] & 0x80) != 0 && getenv("FM_FINAL") == NULL) {
		if ((data[0] & 1) != 0)
			cfg.mistakes |= SC_MISTAKE_HOLD_THREAD_LOCK;
		if ((data[0] & 2) != 0)
			cfg.mistakes |= SC_MISTAKE_NO_PROC_LOCK;
	}
	fm.no_proc_lock = (cfg.mistakes & SC_MISTAKE_NO_PROC_LOCK) != 0;
	if (sc_machine_create(&cfg, &fm.m) != 0)
		fm_fail("sc_machine_create");
	for (i = 0; i < 3; i++)
		if (sc_proc_create(fm.m, "fz", &fm.procs[i]) != 0)
			fm_fail("sc_proc_create");
	for (i = 0; i < in->nops; i++)
		fm_op(data[HDR + 2 * i] % NOPS, data[HDR + 2 * i + 1]);
	for (i = 0; i < MAX_THREADS; i++)
		if (fm.slot[i].td != NULL)
			fm_op(OP_EXIT, (int)i);
	sc_machine_counters(fm.m, &c);
	if (c.exits != fm.exits)
		fm_fail("counters: exits");
	if (c.thread_allocs + c.thread_reuses != fm.creates +
	    (uint64_t)cfg.ncpu)
		fm_fail("counters: thread structs against threads created");
	sc_machine_destroy(fm.m);
	return (0);
}

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fm_input in;
	size_t sched;
	int rc;

	if (size < HDR)
		return (0);
	in.data = data;
	in.nops = data[2] % (MAX_OPS + 1);
	if (in.nops > (size - HDR) / 2)
		in.nops = (size - HDR) / 2;
	sched = HDR + 2 * in.nops;
	rc = sc_check_fuzz(data + sched, size - sched, fm_run, &in);
	if (rc == SC_CHECK_FAILED)
		abort();	/* sc_check_fuzz() said why, and the schedule */
	if (rc != 0) {
		fprintf(stderr, "fuzz_machine: sc_check_fuzz: %s\n",
		    sc_check_why());
		abort();
	}
	return (0);
}
