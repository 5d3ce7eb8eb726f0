/*
 * Deterministic simulation: virtual time (sim_det.c has the whole
 * picture).  Time is the count of scheduling points passed, ds_step: one
 * step, one microsecond, read by sc__ds_clock() (sim_det.h) wherever the
 * library reads its clock (the bounds, the trace), so that a seed's run
 * does not depend on how fast the host runs it.
 *
 * The virtual clock: every ds_tick_steps steps a tick is due on each CPU,
 * taken at that CPU's next point with interrupts enabled
 * (sc__ds_tick_due()).  The tick points come from the step count alone,
 * never from real time.
 *
 * The take-back: a holder that runs without reaching a point (a simulated
 * thread that spins in user code on a flag that another actor sets) would
 * keep the run token for ever.  A waiter for the token watches the holder
 * (sc__ds_watch()); when the holder has used SC_DS_TAKEBACK_NS of CPU
 * time without a step, it signals the holder's CPU pthread, whose handler
 * (sc__ds_takeback(), sim_det_token.c) lets virtual time run to the CPU's
 * next tick and makes a point there.  Real time only decides when the
 * signal comes, not where in the run the point falls: the holder passes no
 * point until then, so the point is the step after the one it was stuck
 * at, whenever the signal comes.
 *
 * No kernel counterpart.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sc_internal.h"
#include "sim_det_var.h"

#define SC_DS_MAX_STEPS	(50ull * 1000 * 1000)	/* then real concurrency */
/*
 * A virtual tick: 1/hz of virtual time at one step a microsecond, so
 * 1000 steps at FreeBSD's default hz = 1000 (100 at SC_HZ_MAX); no tick
 * when cfg.hz is 0.  Long enough that a tick is rare beside the points of
 * a workload (a capture is a few hundred steps), short enough that a
 * thread stuck in a spin has its CPU's tick soon in virtual time.
 */
#define SC_DS_STEPS_PER_S (1000ull * 1000)
/*
 * CPU time the holder may use without a step before its CPU pthread is
 * interrupted.  The library's own code between two points takes
 * microseconds, also under the sanitizers; a holder past this is in a
 * loop of its own.  Its CPU time, not real time: a holder that Linux
 * does not run (a loaded host) is not stuck.  0.5 ms was too short: with
 * the whole suite running at -j2 beside other jobs, test_explore's
 * snapshot replays differed (a holder took that much between two points,
 * in page faults or a hypervisor's stolen time); at 2 ms they still did,
 * rarely, with two 20-minute stress tests running beside the suite, so
 * 5 ms (and never inside the library's code: sim_det_token.c).
 */
#define SC_DS_TAKEBACK_NS (5ull * 1000 * 1000)

/* The clock of a new machine's CPUs: the first tick one tick in. */
void
sc__ds_clock_init(struct sc_ds *ds)
{
	int i;

	ds->ds_tick_steps = ds->ds_m->m_cfg.hz != 0 ?
	    SC_DS_STEPS_PER_S / (uint64_t)ds->ds_m->m_cfg.hz : 0;
	for (i = 0; i < ds->ds_m->m_ncpu; i++)
		ds->ds_actor[i].a_tick_next = ds->ds_tick_steps;
}

/*
 * One step passes (the holder, at a point).  False past SC_DS_MAX_STEPS:
 * a livelock of the workload, since no bound of ours is that long.
 * Async-signal-safe.
 */
bool
sc__ds_tick(struct sc_ds *ds)
{
	ds->ds_step++;
	atomic_store_explicit(&ds->ds_seen, ds->ds_step, memory_order_relaxed);
	SC_CNT_INC(ds->ds_m, sim_steps);
	return (__builtin_expect(ds->ds_step < SC_DS_MAX_STEPS, 1));
}

/*
 * A CPU interrupted in a loop of its own: virtual time runs to just
 * before the next tick, so that the point it makes now (one more step)
 * falls on it.  The next tick of the clock, not of this CPU (a_tick_next
 * stays where it is while interrupts are disabled): a CPU that spins with
 * interrupts disabled still moves time a tick at each take-back, so that
 * a bound that waits for it passes in as many take-backs as it has ticks.
 * Without a clock, one step.  Async-signal-safe.
 */
void
sc__ds_spin_to_tick(struct sc_ds *ds)
{
	uint64_t n = ds->ds_tick_steps;

	if (n != 0)
		ds->ds_step = (ds->ds_step / n + 1) * n - 1;
}

/*
 * A virtual tick is due on pc now: its CPU, the holder at a point, has
 * reached the step of its next tick.  While interrupts are disabled the
 * tick stays due (the kernel's clock interrupt waits for them too); an
 * idle CPU takes none (a CPU with nothing to run sleeps through its
 * ticks).  True consumes the tick: the caller takes the clock interrupt.
 * A CPU that waited past several ticks takes one.
 */
bool
sc__ds_tick_due(struct sc_pcpu *pc)
{
	struct sc_ds *ds = pc->pc_machine->m_ds;
	struct sc_ds_actor *a;
	struct sc_thread *td;

	SC_KASSERT(ds != NULL, (false), "cpu%d: its machine is not "
	    "deterministic", pc->pc_cpuid);
	a = &ds->ds_actor[pc->pc_cpuid];
	if (ds->ds_tick_steps == 0 || ds->ds_step < a->a_tick_next ||
	    atomic_load_explicit(&pc->pc_spinlock_count,
	    memory_order_relaxed) != 0)
		return (false);
	a->a_tick_next = (ds->ds_step / ds->ds_tick_steps + 1) *
	    ds->ds_tick_steps;
	td = atomic_load_explicit(&pc->pc_curthread, memory_order_relaxed);
	return (td != NULL && td != pc->pc_idlethread);
}

/*
 * The CPU time a CPU pthread has used (its Linux tid), or 0: the clock id
 * of another thread's CPU time, as glibc's pthread_getcpuclockid() makes
 * it, without the pthread_t, which the CPU's exit may free meanwhile.
 */
static uint64_t
sc_ds_cputime(pid_t tid)
{
	struct timespec ts;
	clockid_t id = (clockid_t)((~(unsigned)tid << 3) | 6);

	if (tid == 0 || clock_gettime(id, &ts) != 0)
		return (0);
	return ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
}

/*
 * The watchdog's look at ds's holder (sim_det.c: every SC_DS_WATCH_NS,
 * (g) held, ds armed, so its machine is alive).  A CPU that held the
 * token at the same step at the last look and has used SC_DS_TAKEBACK_NS
 * of CPU time since is asked to give it back (ds_kick) by a signal to its
 * pthread.  A plain pthread is never interrupted: its code between two
 * calls is the program's, which may hold locks of its own, block a
 * signal, or sleep in a system call that a signal would end with EINTR;
 * a program thread that waits for the machine makes points
 * (sc_maybe_yield()).  A CPU pthread runs simulated threads, which take
 * IPI signals on their alternate stack in real mode anyway.  A token that
 * has not moved for SC_DS_STUCK_NS of real time, whoever holds it, is
 * reported once.
 */
void
sc__ds_watch(struct sc_ds *ds)
{
	struct sc_machine *m = ds->ds_m;
	uint64_t step, t, now = sc_now_ns();
	pid_t tid;
	int cur, cpu;

	step = atomic_load_explicit(&ds->ds_seen, memory_order_relaxed);
	cur = atomic_load(&ds->ds_cur);
	cpu = ds->ds_actor[cur].a_cpu;
	tid = cpu >= 0 ? atomic_load(&m->m_pcpu[cpu].pc_ktid) : 0;
	t = sc_ds_cputime(tid);
	if (step != ds->ds_wd_step || cur != ds->ds_wd_cur ||
	    ds->ds_wd_since == 0) {
		ds->ds_wd_step = step;
		ds->ds_wd_cur = cur;
		ds->ds_wd_cpu = t;
		ds->ds_wd_since = now;
		return;
	}
	if (t != 0 && t - ds->ds_wd_cpu >= SC_DS_TAKEBACK_NS) {
		ds->ds_wd_cpu = t;
		atomic_store(&ds->ds_kick, step + 1);
		(void)syscall(SYS_tgkill, m->m_pid, tid, m->m_cfg.ipi_signo);
	}
	if (now - ds->ds_wd_since >= SC_DS_STUCK_NS && !ds->ds_stuck) {
		ds->ds_stuck = true;
		fprintf(stderr, "stackcap: deterministic mode: the run token "
		    "has not moved for 10 s, held by actor %d (%s): does a "
		    "pthread block outside the library, or drive another "
		    "machine for long, while it holds it?\n", cur,
		    cpu >= 0 ? "a CPU" : "a plain pthread");
	}
}

/*
 * The step at which a wait bounded by timeout_ns (0: none) ends: past it
 * the waiter polls again, and sees it (one step, 1 us).
 */
uint64_t
sc__ds_step_after(const struct sc_ds *ds, long timeout_ns)
{
	return (timeout_ns > 0 ? ds->ds_step + 1 + (uint64_t)timeout_ns / 1000 :
	    UINT64_MAX);
}
