/*
 * sc_machine_snapshot(): procstat -kk -a with every running thread's CPU
 * interrupted in one round.
 *
 * Kernel counterpart: none.  FreeBSD answers procstat -kk -a with
 * sysctl_kern_proc_kstack() (sys/kern/kern_proc.c) for one process after
 * another, and stack_save_td() (sys/x86/x86/stack_machdep.c) for one
 * thread after another, under the single intr_lock: one IPI round trip
 * per running thread.  Linux's all-CPU backtrace (lib/nmi_backtrace.c)
 * interrupts every CPU at once, but each CPU only prints.  Here each CPU
 * answers into its own request slot (struct sc_stack_intr), so that one
 * round gathers them all, and the kernel's rules stay: the proc lock
 * keeps a thread from exiting and from being swapped out; its thread lock
 * is held for the pcb walk and dropped before the IPI; an answer counts
 * only if it names the thread it was for.
 *
 * One bound, capture_timeout_ns from the call, covers every wait: a
 * process whose proc lock is not had by then is left out (ETIMEDOUT), a
 * running thread not answered by then is RUNNING with depth 0.  First
 * every process is locked (in pid order, and kept locked to the end) and
 * each thread looked at under its thread lock: a running one gets its
 * td_oncpu noted and its lock dropped; the others are left to walk.  A
 * round: look again at each running thread whose CPU is not
 * known, open the slot of each CPU found (in CPU order, so that two
 * snapshots never wait for each other in a cycle), send all the IPIs, walk
 * the threads left to walk while the IPIs fly (each from its pcb, under
 * its thread lock, or, if it runs by now, left to the next round), then
 * collect every answer.  A thread whose answer named another (it switched
 * off meanwhile), whose td_oncpu was NOCPU (switching), or whose CPU
 * another thread of the round claimed (a stale td_oncpu) is looked at
 * again in the next round.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sc_internal.h"

#define SC_SNAP_CHUNK	64	/* tids read per sc__proc_tids() call */

/*
 * One thread of the snapshot.  Locking: the caller's own (the array is
 * private to one call); se_td is valid while se_p's proc lock is held.
 */
struct sc_snap_ent {
	struct sc_proc	*se_p;
	int		se_tid;
	struct sc_thread *se_td;	/* found again (tdfind()), or NULL */
	struct sc_kstack *se_out;	/* its element of out[], or NULL
					   past max (counted, not captured) */
	int		se_cpu;		/* this round's CPU, or SC_NOCPU:
					   look again */
	bool		se_pending;	/* running, not captured yet */
	bool		se_walk;	/* not running at the first look:
					   walk it during the first round */
};

struct sc_snap {
	struct sc_machine *sn_m;
	struct sc_thread *sn_self;
	struct sc_snap_ent *sn_ent;
	size_t		sn_n, sn_cap;
	size_t		sn_npending, sn_nwalk;
	struct sc_proc	**sn_procs;	/* every process, by pid: locked;
					   NULL: not locked in time */
	size_t		sn_nprocs, sn_nmissed; /* ... how many are NULL */
	uint64_t	sn_deadline;
	struct sc_snap_slot {
		int		ss_ent;	/* the round's entry, or -1 */
		uint64_t	ss_tag;	/* its request */
	}		*sn_slot;	/* [ncpu] */
};

/*
 * Leave process i out: its proc lock was not had within the bound.  The
 * proc locks already taken stay held, and are released at the end.
 */
static void
sc_snap_miss(struct sc_snap *sn, size_t i)
{
	sn->sn_procs[i] = NULL;
	sn->sn_nmissed++;
}

/*
 * Append every live tid of process pi, read under one hold of its proc
 * lock; left out if that lock is not had within the bound.
 */
static int
sc_snap_list(struct sc_snap *sn, size_t pi)
{
	struct sc_proc *p = sn->sn_procs[pi];
	struct sc_snap_ent *e;
	int tids[SC_SNAP_CHUNK], last = 0;
	size_t i, nt;

	if (sc__proc_lock_until(p, sn->sn_deadline) != 0) {
		sc_snap_miss(sn, pi);
		return (0);
	}
	for (;;) {
		nt = sc__proc_tids(p, last, INT_MAX, tids, SC_SNAP_CHUNK);
		if (nt == 0)
			break;
		if (sn->sn_n + nt > sn->sn_cap) {
			sn->sn_cap = 2 * (sn->sn_n + nt);
			e = realloc(sn->sn_ent, sn->sn_cap * sizeof(*e));
			if (e == NULL) {
				sc_proc_unlock(p);
				return (ENOMEM);
			}
			sn->sn_ent = e;
		}
		for (i = 0; i < nt; i++) {
			e = &sn->sn_ent[sn->sn_n++];
			memset(e, 0, sizeof(*e));
			e->se_p = p;
			e->se_tid = tids[i];
			e->se_cpu = SC_NOCPU;
		}
		last = tids[nt - 1];
	}
	sc_proc_unlock(p);
	return (0);
}

/* Every process of m, in pid order (their creation order). */
static int
sc_snap_procs(struct sc_machine *m, struct sc_proc ***pp, size_t *np)
{
	struct sc_proc *p, **procs;
	size_t n = 0;

	sc__host_lock(&m->m_list_mtx);
	procs = malloc(((size_t)m->m_nprocs + 1) * sizeof(*procs));
	for (p = m->m_procs; procs != NULL && p != NULL; p = p->p_next)
		procs[n++] = p;
	sc__host_unlock(&m->m_list_mtx);
	if (procs == NULL)
		return (ENOMEM);
	*pp = procs;
	*np = n;
	return (0);
}

/* A running thread's capture is over: its state, and the bookkeeping of
 * every capture (sc__stack_save_done()). */
static void
sc_snap_done(struct sc_snap *sn, struct sc_snap_ent *e, int state,
    int error)
{
	e->se_out->state = state;
	e->se_pending = false;
	sn->sn_npending--;
	sc__stack_save_done(sn->sn_m, e->se_tid, &e->se_out->stack, error);
}

/*
 * Look at e's thread under its thread lock.  Running: drop the lock (step
 * 4) and note its CPU.  Not running at the first look: leave it to walk
 * (sc_snap_walk()); at a later look (it ran before): walk its pcb now,
 * which ends its capture.  The thread cannot start running while we hold
 * its lock.
 */
static void
sc_snap_look(struct sc_snap *sn, struct sc_snap_ent *e)
{
	struct sc_machine *m = sn->sn_m;
	struct sc_thread *td = e->se_td;

	sc_thread_lock(td);
	if (e->se_pending)
		SC_TRACE(m, SC_TRACE_LOCK_TAKEN, sc_curcpu(), e->se_tid, 0, 0);
	if (!e->se_pending && TD_IS_SWAPPED(td)) {
		/* Only at the first look: the proc lock is held since. */
		sc_stack_zero(&e->se_out->stack);
		sc_thread_unlock(td);
		e->se_out->state = SC_KKST_STATE_SWAPPED;
		return;
	}
	if (!e->se_pending && (!TD_IS_RUNNING(td) || td == sn->sn_self)) {
		sc_thread_unlock(td);
		e->se_walk = true;
		sn->sn_nwalk++;
		return;
	}
	if (!TD_IS_RUNNING(td)) {
		sc__stack_walk_pcb(&e->se_out->stack, td, e->se_tid);
		sc_thread_unlock(td);
		SC_CNT_INC(m, retry_offcpu);
		sc_snap_done(sn, e, SC_KKST_STATE_STACKOK, 0);
		return;
	}
	if (!e->se_pending) {
		/* No CAPTURE_BEGIN: the snapshot's captures overlap, and
		 * its SNAPSHOT_BEGIN stands for them (trace_json.c). */
		e->se_pending = true;
		sn->sn_npending++;
	}
	SC_TRACE(m, SC_TRACE_LOCK_DROPPED, sc_curcpu(), e->se_tid, 0, 0);
	sc_thread_unlock(td);
	sc__hook(m, SC_HOOK_SAVE_UNLOCKED, td);
	e->se_cpu = atomic_load(&td->td_oncpu);
	if (e->se_cpu == SC_NOCPU) {
		/* Switching, on or off a CPU: the next round looks again. */
		SC_CNT_INC(m, retry_nocpu);
	}
}

/*
 * Walk the threads left to walk: each is a capture of its own, with its
 * own trace and counters (sc_stack_save_td() walks the pcb, or, for the
 * caller itself, its own stack).  One that runs by now is left to the
 * next round.
 */
static void
sc_snap_walk(struct sc_snap *sn)
{
	struct sc_snap_ent *e;
	struct sc_thread *td;
	size_t i;
	int error;

	for (i = 0; sn->sn_nwalk > 0 && i < sn->sn_n; i++) {
		e = &sn->sn_ent[i];
		if (!e->se_walk)
			continue;
		e->se_walk = false;
		sn->sn_nwalk--;
		td = e->se_td;
		sc_thread_lock(td);
		if (TD_IS_RUNNING(td) && td != sn->sn_self) {
			sc_thread_unlock(td);
			e->se_pending = true;
			e->se_cpu = SC_NOCPU;
			sn->sn_npending++;
			continue;
		}
		error = sc_stack_save_td(&e->se_out->stack, td);
		sc_thread_unlock(td);
		e->se_out->state = error == 0 ? SC_KKST_STATE_STACKOK :
		    SC_KKST_STATE_RUNNING;
	}
}

/* An answer came for e (NULL: none within the bound). */
static void
sc_snap_answer(struct sc_snap *sn, struct sc_snap_ent *e,
    struct sc_thread *answer, bool kstack)
{
	struct sc_machine *m = sn->sn_m;
	int error;

	e->se_cpu = SC_NOCPU;
	if (answer == NULL) {
		sc_snap_done(sn, e, SC_KKST_STATE_RUNNING, ETIMEDOUT);
		return;
	}
	if (answer == e->se_td) {
		SC_TRACE(m, SC_TRACE_ANSWER_SEEN, sc_curcpu(), e->se_tid,
		    answer->td_tid, answer->td_gen);
		error = sc__stack_save_answered(m, &e->se_out->stack, kstack);
		sc_snap_done(sn, e, error == 0 ? SC_KKST_STATE_STACKOK :
		    SC_KKST_STATE_RUNNING, error);
		return;
	}
	/* e's thread switched off, or its CPU went idle: next round. */
	SC_CNT_INC(m, snapshot_retries);
	sc__stack_save_retried(m, e->se_tid, answer);
}

/*
 * One round: look at the pending threads whose CPU is not known, claim a
 * slot per CPU, send every IPI, collect every answer.  Returns whether it
 * sent any IPI.
 */
static bool
sc_snap_round(struct sc_snap *sn, uint64_t round)
{
	struct sc_machine *m = sn->sn_m;
	struct sc_snap_slot *ss;
	struct sc_snap_ent *e;
	struct sc_thread *answer;
	size_t i;
	int cpu, nsent = 0;
	bool kstack;

	for (cpu = 0; cpu < m->m_ncpu; cpu++)
		sn->sn_slot[cpu].ss_ent = -1;
	for (i = 0; i < sn->sn_n; i++) {
		e = &sn->sn_ent[i];
		if (!e->se_pending)
			continue;
		if (e->se_cpu == SC_NOCPU)
			sc_snap_look(sn, e);
		if (!e->se_pending || e->se_cpu == SC_NOCPU)
			continue;
		if (sn->sn_slot[e->se_cpu].ss_ent >= 0) {
			/* A td_oncpu read before a switch: look again. */
			e->se_cpu = SC_NOCPU;
			continue;
		}
		sn->sn_slot[e->se_cpu].ss_ent = (int)i;
	}
	/* Open the slots in CPU order: no cycle with another snapshot. */
	for (cpu = 0; cpu < m->m_ncpu; cpu++) {
		ss = &sn->sn_slot[cpu];
		if (ss->ss_ent < 0)
			continue;
		if (sc__stack_intr_open(&m->m_pcpu[cpu],
		    sn->sn_ent[ss->ss_ent].se_td, sn->sn_deadline,
		    &ss->ss_tag) != 0) {
			sc_snap_answer(sn, &sn->sn_ent[ss->ss_ent], NULL,
			    false);
			ss->ss_ent = -1;
			continue;
		}
		sc__hook(m, SC_HOOK_SAVE_BEFORE_IPI,
		    sn->sn_ent[ss->ss_ent].se_td);
		nsent++;
	}
	if (nsent == 0) {
		sc_snap_walk(sn);
		/* Only NOCPU threads: they are switching, shortly. */
		if (sn->sn_npending > 0)
			sc__cpu_spinwait();
		return (false);
	}
	SC_CNT_INC(m, snapshot_rounds);
	SC_TRACE(m, SC_TRACE_SNAPSHOT_ROUND, sc_curcpu(), 0, round,
	    (uint64_t)nsent);
	for (cpu = 0; cpu < m->m_ncpu; cpu++)
		if (sn->sn_slot[cpu].ss_ent >= 0)
			sc__ipi_cpu(&m->m_pcpu[cpu], SC_IPI_TRACE,
			    sn->sn_ent[sn->sn_slot[cpu].ss_ent].se_tid);
	/* While the IPIs fly. */
	sc_snap_walk(sn);
	for (cpu = 0; cpu < m->m_ncpu; cpu++) {
		ss = &sn->sn_slot[cpu];
		if (ss->ss_ent < 0)
			continue;
		e = &sn->sn_ent[ss->ss_ent];
		answer = sc__stack_intr_wait(&m->m_pcpu[cpu], ss->ss_tag,
		    sn->sn_deadline);
		kstack = sc__stack_intr_close(&m->m_pcpu[cpu], answer,
		    e->se_td, &e->se_out->stack);
		if (answer == NULL)
			sc__stack_intr_diagnose(m, &m->m_pcpu[cpu]);
		sc_snap_answer(sn, e, answer, kstack);
	}
	return (true);
}

/* The bound expired: walk what is left, give up on the running. */
static void
sc_snap_expire(struct sc_snap *sn)
{
	size_t i;

	sc_snap_walk(sn);
	for (i = 0; i < sn->sn_n; i++)
		if (sn->sn_ent[i].se_pending)
			sc_snap_done(sn, &sn->sn_ent[i],
			    SC_KKST_STATE_RUNNING, ETIMEDOUT);
}

/*
 * Lock every process, in pid order (they stay locked to the end, so that
 * no thread of the snapshot exits or is swapped out), find each thread
 * again (tdfind()) and look at it.  A process whose lock is not had within
 * the bound is left out, its threads with it.
 */
static size_t
sc_snap_find(struct sc_snap *sn, struct sc_kstack *out, size_t elsize,
    size_t max)
{
	struct sc_snap_ent *e;
	size_t i, listed = 0;

	for (i = 0; i < sn->sn_nprocs; i++)
		if (sn->sn_procs[i] != NULL &&
		    sc__proc_lock_until(sn->sn_procs[i], sn->sn_deadline) != 0)
			sc_snap_miss(sn, i);
	for (i = 0; i < sn->sn_n; i++) {
		e = &sn->sn_ent[i];
		if (!sc_proc_lock_owned(e->se_p))
			continue;	/* left out */
		e->se_td = sc__proc_tdfind(e->se_p, e->se_tid);
		if (e->se_td == NULL)
			continue;	/* exited meanwhile */
		if (listed < max) {
			e->se_out = sc__kstack_elem(out, elsize, listed,
			    e->se_p, e->se_tid, e->se_td->td_name);
			sc_snap_look(sn, e);
		}
		listed++;
	}
	return (listed);
}

/*
 * The kernel's way, for capture_serial and the teaching modes: each
 * process in turn through sc_proc_kstack(), all within one bound.  A
 * process whose proc lock is not had in time lists the threads it had
 * listed by then, and the next one is tried: ETIMEDOUT at the end.
 */
static int
sc_snap_serial(struct sc_proc **procs, size_t nprocs, struct sc_kstack *out,
    size_t elsize, size_t max, size_t *n, uint64_t deadline)
{
	size_t i, k, total = 0;
	int error, result = 0;

	for (i = 0; i < nprocs; i++) {
		error = sc__proc_kstack_until(procs[i], total < max ?
		    (struct sc_kstack *)(void *)((char *)out + total *
		    elsize) : NULL, elsize, total < max ? max - total : 0, &k,
		    deadline);
		if (error != 0)
			result = error;
		total += k;
	}
	*n = total;
	return (result);
}

int
sc_machine_snapshot_sz(struct sc_machine *m, struct sc_kstack *out,
    size_t elsize, size_t max, size_t *n)
{
	const struct sc_range *text;
	struct sc_snap sn;
	struct sc_proc **procs;
	size_t i, nprocs, listed, ntext;
	uint64_t round, deadline;
	int error;

	/* Bad arguments are an error the caller can test, not misuse. */
	if (m == NULL || n == NULL || (out == NULL && max != 0) ||
	    elsize < SC__KSTACK_SIZE_V0)
		return (EINVAL);
	SC_KASSERT(sc__spin_held_count() == 0, EINVAL, "snapshot: the caller "
	    "holds a spin lock (a thread lock?)");
	SC_KASSERT(!sc__stack_intr_held(m), EINVAL, "snapshot from a hook "
	    "inside a capture of the same machine");
	SC_KASSERT(getpid() == m->m_pid, EINVAL, "machine of pid %d used in "
	    "pid %d: a machine does not survive fork()", (int)m->m_pid,
	    (int)getpid());
	sc__ds_enter(m);
	deadline = sc__capture_deadline(m);
	/* The text ranges, computed here on first use: a handler must find
	 * them ready, it never allocates (as in sc_stack_save_td()). */
	sc_text_ranges(&text, &ntext);
	if ((error = sc_snap_procs(m, &procs, &nprocs)) != 0)
		return (error);
	for (i = 0; i < nprocs; i++) {
		SC_KASSERT(!sc_proc_lock_owned(procs[i]), (free(procs), EINVAL),
		    "snapshot: proc %d's proc lock is held by the caller",
		    procs[i]->p_pid);
	}
	SC_CNT_INC(m, snapshots);
	if (m->m_cfg.capture_serial || m->m_cfg.mistakes != 0 ||
	    m->m_cfg.protocol != SC_PROTO_IPI ||
	    m->m_cfg.arch != SC_ARCH_AMD64) {
		error = sc_snap_serial(procs, nprocs, out, elsize, max, n,
		    deadline);
		free(procs);
		return (error);
	}
	memset(&sn, 0, sizeof(sn));
	sn.sn_m = m;
	sn.sn_self = sc_curthread();
	sn.sn_procs = procs;
	sn.sn_nprocs = nprocs;
	sn.sn_deadline = deadline;
	sn.sn_slot = malloc((size_t)m->m_ncpu * sizeof(*sn.sn_slot));
	error = sn.sn_slot == NULL ? ENOMEM : 0;
	for (i = 0; error == 0 && i < nprocs; i++)
		error = sc_snap_list(&sn, i);
	if (error != 0) {
		free(procs);
		free(sn.sn_ent);
		free(sn.sn_slot);
		return (error);
	}
	SC_TRACE(m, SC_TRACE_SNAPSHOT_BEGIN, sc_curcpu(), 0, sn.sn_n, 0);
	listed = sc_snap_find(&sn, out, elsize, max);
	for (round = 0; sn.sn_npending > 0 || sn.sn_nwalk > 0;) {
		if (sc__ds_clock() >= sn.sn_deadline) {
			sc_snap_expire(&sn);
			break;
		}
		if (sc_snap_round(&sn, round + 1))
			round++;
	}
	for (i = 0; i < nprocs; i++)
		if (procs[i] != NULL)
			sc_proc_unlock(procs[i]);
	SC_TRACE(m, SC_TRACE_SNAPSHOT_DONE, sc_curcpu(), 0, listed, round);
	free(procs);
	free(sn.sn_ent);
	free(sn.sn_slot);
	*n = listed;
	return (sn.sn_nmissed > 0 ? ETIMEDOUT : 0);
}

int
sc_machine_snapshot(struct sc_machine *m, struct sc_kstack *out, size_t max,
    size_t *n)
{
	return (sc_machine_snapshot_sz(m, out, sizeof(*out), max, n));
}
