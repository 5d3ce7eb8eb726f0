/*
 * Deterministic simulation: the run token and the scheduling points
 * (sim_det.c has the whole picture).  Exactly one actor holds the token;
 * at each point the holder draws the next (sim_det_choose.c), gives it
 * the token and waits to get it back.  A pending IPI is taken at a point
 * that the draw picks, and walks from that point's frame.
 *
 * No kernel counterpart.
 */
#include <errno.h>
#include <stdio.h>

#include "sc_internal.h"
#include "sc_futex.h"
#include "sim_det_var.h"
#include "check_var.h"

static __thread int sc_ds_inpoint SC_TLS_IE;
static __thread int sc_ds_blocking SC_TLS_IE;	/* sc__ds_block() ran */
static __thread int sc_ds_inhandler SC_TLS_IE;	/* sc__ds_takeback() runs */
static __thread ucontext_t *sc_ds_uc SC_TLS_IE;	/* ... with this context */

/*
 * Wait until this actor holds the token (or the mode is off).  Async-
 * signal-safe (the take-back's handler waits here too).  The futex wait
 * has no bound: the watchdog (sim_det.c) looks at the holder, and a wait
 * bounded by its period armed and cancelled a timer at every handoff,
 * which cost more than the rest of the handoff on a virtual machine
 * (docs/determinism.md, "The handoff without a timer").  errno is the
 * caller's after it.
 */
static void
sc_ds_wait_token(struct sc_ds *ds, int me)
{
	struct sc_ds_actor *a = &ds->ds_actor[me];
	int saved_errno = errno;

	while (atomic_load(&a->a_go) == 0 && atomic_load(&ds->ds_off) == 0)
		(void)sc__futex_wait_raw(&a->a_go, 0, 0);
	errno = saved_errno;
}

/* The token goes to next (its holder gave it up). */
static void
sc_ds_give(struct sc_ds *ds, int next)
{
	struct sc_ds_actor *b = &ds->ds_actor[next];

	b->a_state = SC_DS_RUNNING;
	atomic_store(&ds->ds_cur, next);
	atomic_store(&b->a_go, 1);
	sc__futex_wake_raw(&b->a_go, 1);
}

/* Give the token from me to next, then wait for it to come back. */
static void
sc_ds_handoff(struct sc_ds *ds, int me, int next)
{
	struct sc_ds_actor *a = &ds->ds_actor[me];

	a->a_state = SC_DS_WAITING;
	atomic_store(&a->a_go, 0);
	sc_ds_give(ds, next);
	sc_ds_wait_token(ds, me);
}

/*
 * A plain pthread exits, an actor of sc__ds_self: a last scheduling
 * point, where it leaves for good and hands the token on (it holds it: it
 * runs).  Before, a pthread that exited took the token with it and the
 * machine stopped.
 */
void
sc__ds_point_exit(void)
{
	struct sc_ds *ds = sc__ds_mine();
	struct sc_ds_actor *a;
	int me = sc__ds_idx, next, i, n;

	if (ds == NULL || atomic_load(&ds->ds_off) ||
	    ds->ds_actor[me].a_cpu >= 0 || atomic_load(&ds->ds_cur) != me) {
		sc__ds_leave();
		return;
	}
	(void)sc__ds_tick(ds);
	next = sc__ds_choose(ds, me, true);
	if (next == me) {
		/* Every other actor is a blocked futex waiter, and none will
		 * run to end a bound: they poll again. */
		n = atomic_load(&ds->ds_nactor);
		for (i = 0; i < n; i++)
			ds->ds_actor[i].a_wuaddr = NULL;
		next = sc__ds_choose(ds, me, true);
	}
	a = &ds->ds_actor[me];
	a->a_state = SC_DS_GONE;
	atomic_store(&a->a_go, 0);
	sc__ds_leave();
	if (next != me)
		sc_ds_give(ds, next);
	/* else no one waits: nothing can run */
}

/* The IPIs pending on this CPU, taken at this point if the draw says so. */
static void
sc_ds_poll_ipi(struct sc_ds *ds, int me, const struct sc_intr_frame *at)
{
	struct sc_pcpu *pc;
	int cpu = ds->ds_actor[me].a_cpu;

	if (cpu < 0)
		return;
	pc = &ds->ds_m->m_pcpu[cpu];
	if (atomic_load(&pc->pc_ipi_pending) == 0 ||
	    atomic_load(&pc->pc_curthread) == NULL)
		return;
	if (!sc__ds_draw_ipi(ds))
		return;			/* later: at another point */
	sc__ipi_poll(pc, at);
}

/*
 * The next point of this actor is a futex wait on uaddr (sc_futex.h).
 * Under the random chooser, and under a check unless it draws by PCT (a
 * waiter that would find its word unchanged is no alternative there:
 * fewer schedules, none lost; a schedule says which it was), only: under
 * PCT a waiter's polls hand the token
 * to a random actor (sc__ds_choose()), and without them PCT found less
 * (bench_explore: the snapshot body reached its window in 59 of 100 seeds
 * instead of 95 under ULE; no-proc-lock failed in 21 instead of 49 under
 * 4BSD), while the random chooser found as much, in less time.
 */
void
sc__ds_block(_Atomic uint32_t *uaddr, uint32_t val, long timeout_ns)
{
	struct sc_ds *ds = sc__ds_mine();
	struct sc_ds_actor *a;

	if (ds == NULL || sc_ds_inpoint || (ds->ds_chk != NULL ?
	    ds->ds_chk->c_polled : ds->ds_pct_depth != 0))
		return;
	a = &ds->ds_actor[sc__ds_idx];
	a->a_wuaddr = uaddr;
	a->a_wval = val;
	a->a_wuntil = sc__ds_step_after(ds, timeout_ns);
	sc_ds_blocking = 1;
}

/* sc__ds_futex_wake(), for an actor of a machine that runs. */
void
sc__ds_futex_wake_slow(_Atomic uint32_t *uaddr)
{
	struct sc_ds *ds = sc__ds_mine();
	int i, n;

	if (ds == NULL)
		return;
	n = atomic_load(&ds->ds_nactor);
	for (i = 0; i < n; i++)
		if (ds->ds_actor[i].a_wuaddr == uaddr)
			ds->ds_actor[i].a_wuaddr = NULL;
}

/*
 * The clock interrupt of a virtual tick on pc, at a point whose frame is
 * at (sc__ds_tick_due() said it is due): hardclock(), as the real clock's
 * signal runs it (kern_clock.c).  A preemption that the scheduler's
 * sched_clock() asks for is taken where the real one is: at a take-back
 * (in the IPI signal's handler, the interrupted code's context at hand)
 * the interrupt's end redirects the interrupted thread there, if it may
 * (sc__clock_intr_end()); at a point inside the library it is owed, and
 * the next safe point takes it (the last spinlock_exit(), critical_exit(),
 * a switch).  Every input of that decision is the seed's: the tick's
 * step, the slice's ticks, the run queues.  No point is open: what the
 * interrupt does may make points and switch threads.
 */
static void
sc_ds_clock_intr(struct sc_pcpu *pc, const struct sc_intr_frame *at)
{
	struct sc_intr_frame frame = *at;
	struct sc_thread *td;

	SC_CNT_INC(pc->pc_machine, sim_ticks);
	td = atomic_load_explicit(&pc->pc_curthread, memory_order_relaxed);
	if (td == NULL)
		return;		/* before the CPU's idle thread runs */
	frame.if_kstack = frame.if_rsp >= td->td_kstack.lo &&
	    frame.if_rsp < td->td_kstack.hi;
	sc__hardclock(pc, td);
	if (sc_ds_inhandler && atomic_load_explicit(&td->td_owepreempt,
	    memory_order_relaxed))
		sc__clock_intr_end(pc, td, &frame, sc_ds_uc);
}

static void
sc_ds_point1(const struct sc_intr_frame *at, bool waiting)
{
	struct sc_ds *ds = sc__ds_mine();
	int me, next, cpu;

	if (ds == NULL || sc_ds_inpoint || atomic_load(&ds->ds_off))
		return;
	sc_ds_inpoint = 1;
	me = sc__ds_idx;
	/* A CPU's first point, or a plain pthread's first call. */
	sc_ds_wait_token(ds, me);
	if (!sc_ds_blocking)
		ds->ds_actor[me].a_wuaddr = NULL;
	sc_ds_blocking = 0;
	if (!sc__ds_tick(ds) && !sc_ds_inhandler) {
		/* Let the machine run free rather than spin for ever (not
		 * from a signal handler: the next point outside one). */
		if (ds->ds_chk != NULL)
			atomic_store(&ds->ds_chk->c_livelock, 1);
		fprintf(stderr, "stackcap: deterministic mode: %ju steps "
		    "without an end (a livelock?); the machine runs with real "
		    "concurrency from here on\n", (uintmax_t)ds->ds_step);
		sc__ds_stop(ds->ds_m);
		sc_ds_inpoint = 0;
		return;
	}
	next = sc__ds_choose(ds, me, waiting);
	if (next != me)
		sc_ds_handoff(ds, me, next);
	ds->ds_actor[me].a_wuaddr = NULL;
	sc_ds_poll_ipi(ds, me, at);
	sc_ds_inpoint = 0;
	cpu = ds->ds_actor[me].a_cpu;
	if (cpu >= 0 && sc__ds_tick_due(&ds->ds_m->m_pcpu[cpu]))
		sc_ds_clock_intr(&ds->ds_m->m_pcpu[cpu], at);
}

/*
 * The take-back (sim_det_clock.c), in the IPI signal's handler on the
 * holder's CPU pthread, which a waiter signalled: in deterministic mode
 * no IPI is a signal, so a signal is this, or one that came late.  If
 * this CPU still holds the token at the step it was stuck at, the
 * interrupted code ran until the CPU's next virtual tick and makes a
 * point there, as a waiter (it spins, presumably for another actor), with
 * the interrupted frame as the point's (its %rsp too: whether the thread
 * was on its kernel stack): an IPI taken there
 * walks the interrupted chain, as the signal handler's does in real
 * mode.  Only where a point is safe: no host lock held (td_hostlocks:
 * the next holder might block on it, outside any point), and not in libc,
 * the loader or a sanitizer runtime (m_nostop: they may hold locks of
 * their own), and not in the library's own code, whose every loop makes
 * points: a holder there is slow (a loaded host, a page fault), not
 * stuck, and a point made at whatever instruction the signal found would
 * make the run depend on the host's timing; else the waiter asks again
 * later.  With interrupts disabled
 * (a spin lock held, a hook in a switch) it is taken back too: the
 * take-back is no interrupt of the simulated CPU but the other CPUs
 * running beside it, as they do in real mode whatever its interrupt flag
 * says, and a spin lock it holds is waited for at points.  The IPI polled
 * at that point is deferred, and so is the tick, as interrupts are.
 * uc: the signal's context, which the virtual tick's interrupt end may
 * redirect to a preemption (sc_ds_clock_intr()).  Async-signal-safe:
 * futexes, atomics and this pthread's own TLS; no lock, no allocation
 * (the caller saves errno).
 */
void
sc__ds_takeback(struct sc_pcpu *pc, const struct sc_intr_frame *frame,
    ucontext_t *uc)
{
	struct sc_ds *ds = sc__ds_mine();
	struct sc_machine *m = pc->pc_machine;
	struct sc_thread *td;
	uint64_t kick;
	int me = sc__ds_idx;

	if (ds == NULL || sc_ds_inpoint || sc_ds_inhandler ||
	    atomic_load(&ds->ds_off))
		return;
	kick = atomic_exchange(&ds->ds_kick, 0);
	if (atomic_load(&ds->ds_cur) != me || kick != ds->ds_step + 1)
		return;			/* it passed a point since */
	td = atomic_load_explicit(&pc->pc_curthread, memory_order_relaxed);
	if (td == NULL || atomic_load_explicit(&td->td_hostlocks,
	    memory_order_relaxed) != 0 ||
	    sc_pc_in_text(frame->if_rip, m->m_nostop, m->m_nnostop) ||
	    sc__in_library_text(frame->if_rip))
		return;
	sc_ds_inhandler = 1;
	sc_ds_uc = uc;
	SC_CNT_INC(m, sim_takebacks);
	sc__ds_spin_to_tick(ds);
	sc_ds_point1(frame, true);
	sc_ds_uc = NULL;
	sc_ds_inhandler = 0;
}

/*
 * A scheduling point (sc__ds_point(), sc__ds_wait()): an IPI taken here
 * walks from this function's frame, so it is never inlined.
 */
__attribute__((noinline)) void
sc__ds_point_slow(bool waiting)
{
	struct sc_intr_frame at;

	at.if_rbp = (uintptr_t)__builtin_frame_address(0);
	at.if_rsp = at.if_rbp;
	at.if_rip = (uintptr_t)__builtin_return_address(0);
	sc_ds_point1(&at, waiting);
}
