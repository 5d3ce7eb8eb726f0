/*
 * Processes: creation, the proc lock, the thread list, and
 * kern.proc.kstack.
 *
 * Kernel counterparts: sys/kern/kern_fork.c (a new proc), the PROC_LOCK()
 * macros of sys/sys/proc.h, sys/kern/kern_proc.c
 * (sysctl_kern_proc_kstack()).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_internal.h"

int
sc_proc_pid(const struct sc_proc *p)
{
	return (p->p_pid);
}

const char *
sc_proc_comm(const struct sc_proc *p)
{
	return (p->p_comm);
}

struct sc_machine *
sc_proc_machine(const struct sc_proc *p)
{
	return (p->p_machine);
}

int
sc_proc_create(struct sc_machine *m, const char *comm, struct sc_proc **pp)
{
	struct sc_proc *p;

	if (m == NULL || comm == NULL || pp == NULL)
		return (EINVAL);
	sc__ds_enter(m);
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return (ENOMEM);
	p->p_machine = m;
	snprintf(p->p_comm, sizeof(p->p_comm), "%s", comm);
	sc__mtx_init(&p->p_mtx, "proc lock", &m->m_cnt.proc_lock_waits);
	TAILQ_INIT(&p->p_threads);
	sc__host_lock(&m->m_list_mtx);
	p->p_pid = m->m_nextpid++;
	*m->m_procs_tail = p;
	m->m_procs_tail = &p->p_next;
	m->m_nprocs++;
	sc__host_unlock(&m->m_list_mtx);
	*pp = p;
	return (0);
}

void
sc_proc_lock(struct sc_proc *p)
{
	sc__ds_enter(p->p_machine);
	sc__mtx_lock(&p->p_mtx);
}

void
sc_proc_unlock(struct sc_proc *p)
{
	sc__ds_enter(p->p_machine);
	sc__mtx_unlock(&p->p_mtx);
}

/*
 * The proc lock, or ETIMEDOUT at deadline (sc__ds_clock(); UINT64_MAX:
 * wait as sc_proc_lock() does).  Only the listing calls bound it; the
 * kernel's PROC_LOCK() waits for ever.
 */
int
sc__proc_lock_until(struct sc_proc *p, uint64_t deadline)
{
	if (deadline == UINT64_MAX) {
		sc_proc_lock(p);
		return (0);
	}
	sc__ds_enter(p->p_machine);
	if (sc__mtx_lock_until(&p->p_mtx, deadline) == 0)
		return (0);
	SC_CNT_INC(p->p_machine, timeouts);
	return (ETIMEDOUT);
}

int
sc_proc_lock_owned(const struct sc_proc *p)
{
	return (sc__mtx_owned(&p->p_mtx));
}

void
sc_proc_threads(struct sc_proc *p, struct sc_thread **out, size_t max,
    size_t *n)
{
	struct sc_thread *td;
	size_t i = 0;

	sc__host_lock(&p->p_machine->m_list_mtx);
	TAILQ_FOREACH(td, &p->p_threads, td_plist) {
		if (i < max)
			out[i] = td;
		i++;
	}
	sc__host_unlock(&p->p_machine->m_list_mtx);
	*n = i;
}

/*
 * The thread after td in p's list (the first when td is NULL).  The
 * caller holds the proc lock, so td stays in the list between two calls:
 * a joined thread leaves it only with the proc lock held
 * (sc_thread_zone_put()), and its struct moves to another proc only after
 * that.
 */
static struct sc_thread *
sc_proc_next_thread(struct sc_proc *p, struct sc_thread *td)
{
	struct sc_thread *next;

	SC_MTX_ASSERT_OWNED(&p->p_mtx, NULL);
	sc__host_lock(&p->p_machine->m_list_mtx);
	next = td == NULL ? TAILQ_FIRST(&p->p_threads) :
	    TAILQ_NEXT(td, td_plist);
	sc__host_unlock(&p->p_machine->m_list_mtx);
	return (next);
}

/* Live threads of p with after < tid <= bound, at most max of them, in
 * tid order (the list is in creation order). */
size_t
sc__proc_tids(struct sc_proc *p, int after, int bound, int *tids, size_t max)
{
	struct sc_thread *td;
	size_t n = 0;

	SC_MTX_ASSERT_OWNED(&p->p_mtx, 0);
	for (td = sc_proc_next_thread(p, NULL); td != NULL && n < max;
	    td = sc_proc_next_thread(p, td)) {
		if (td->td_tid <= after)
			continue;
		if (td->td_tid > bound)
			break;
		if (atomic_load(&td->td_state) != SC_TDS_INACTIVE)
			tids[n++] = td->td_tid;
	}
	return (n);
}

/* tdfind(): the live thread of p whose tid is tid, or NULL. */
struct sc_thread *
sc__proc_tdfind(struct sc_proc *p, int tid)
{
	struct sc_thread *td;

	SC_MTX_ASSERT_OWNED(&p->p_mtx, NULL);
	for (td = sc_proc_next_thread(p, NULL); td != NULL;
	    td = sc_proc_next_thread(p, td))
		if (td->td_tid == tid)
			return (atomic_load(&td->td_state) == SC_TDS_INACTIVE ?
			    NULL : td);
	return (NULL);
}

/* The last tid of p so far (0: no thread). */
static int
sc_proc_last_tid(struct sc_proc *p)
{
	struct sc_thread *td;
	int tid = 0;

	SC_MTX_ASSERT_OWNED(&p->p_mtx, 0);
	for (td = sc_proc_next_thread(p, NULL); td != NULL;
	    td = sc_proc_next_thread(p, td))
		tid = td->td_tid;
	return (tid);
}

/* One thread's entry, captured with the proc lock and its thread lock
 * held, as the kernel does; the tid and name too: once the proc lock is
 * dropped, td may exit, be joined and be reused.  The caller fills in the
 * rest unlocked. */
static void
sc_proc_kstack_one(struct sc_thread *td, struct sc_kstack *kk,
    uint64_t deadline)
{
	kk->tid = atomic_load(&td->td_tid);
	snprintf(kk->tdname, sizeof(kk->tdname), "%s", td->td_name);
	sc_thread_lock(td);
	if (TD_IS_SWAPPED(td)) {
		kk->state = SC_KKST_STATE_SWAPPED;
		sc_stack_zero(&kk->stack);
	} else if (sc__stack_save_td_until(&kk->stack, td, deadline) == 0)
		kk->state = SC_KKST_STATE_STACKOK;
	else
		kk->state = SC_KKST_STATE_RUNNING;
	sc_thread_unlock(td);
}

int
sc_proc_kstack(struct sc_proc *p, struct sc_kstack *out, size_t max,
    size_t *n)
{
	return (sc_proc_kstack_sz(p, out, SC__KSTACK_SIZE_V0, max, n));
}

/*
 * Element i of out[] (elements elsize bytes apart: the caller's struct),
 * its fields after stackcap 0.1's zeroed as far as the caller has them,
 * with tid, name and pid set.  The state and stack are the caller's.
 */
struct sc_kstack *
sc__kstack_elem(struct sc_kstack *out, size_t elsize, size_t i,
    const struct sc_proc *p, int tid, const char *name)
{
	struct sc_kstack *kk;
	size_t known = elsize < sizeof(*kk) ? elsize : sizeof(*kk);

	kk = (struct sc_kstack *)(void *)((char *)out + i * elsize);
	memset((char *)kk + SC__KSTACK_SIZE_V0, 0, known - SC__KSTACK_SIZE_V0);
	kk->tid = tid;
	snprintf(kk->tdname, sizeof(kk->tdname), "%s", name);
	if (known >= offsetof(struct sc_kstack, pid) + sizeof(kk->pid))
		kk->pid = p->p_pid;
	return (kk);
}

#define SC_KSTACK_CHUNK	32	/* tids snapshotted per proc-lock hold */

/*
 * sysctl_kern_proc_kstack() (sys/kern/kern_proc.c), with its locking: the
 * tids are snapshotted with the proc lock held; then, for each, the proc
 * lock is taken again, the thread found again by tid (tdfind()), captured
 * under its thread lock, and the entry filled with no lock held.  A thread
 * that exits in between is skipped; one created after the snapshot is not
 * listed.  The snapshot is taken in chunks of SC_KSTACK_CHUNK, all bounded
 * by the last tid at the start, so that no allocation is needed: the same
 * set as one snapshot.
 *
 * Every wait, for the proc lock and for each capture, ends at deadline
 * (UINT64_MAX: none).  A proc lock not had by then ends the listing:
 * ETIMEDOUT, with *n the threads listed so far.  A capture not answered by
 * then is SC_KKST_STATE_RUNNING, as sc_stack_save_td()'s ETIMEDOUT.
 */
int
sc__proc_kstack_until(struct sc_proc *p, struct sc_kstack *out,
    size_t elsize, size_t max, size_t *n, uint64_t deadline)
{
	int tids[SC_KSTACK_CHUNK], bound, last = 0;
	struct sc_thread *td;
	struct sc_kstack *kk, one;
	size_t i = 0, j, nt;

	*n = 0;
	if (sc__proc_lock_until(p, deadline) != 0)
		return (ETIMEDOUT);
	bound = sc_proc_last_tid(p);
	sc_proc_unlock(p);
	for (;;) {
		if (sc__proc_lock_until(p, deadline) != 0)
			return (ETIMEDOUT);
		nt = sc__proc_tids(p, last, bound, tids, SC_KSTACK_CHUNK);
		sc_proc_unlock(p);
		if (nt == 0)
			break;
		for (j = 0; j < nt; j++) {
			if (sc__proc_lock_until(p, deadline) != 0)
				return (ETIMEDOUT);
			td = sc__proc_tdfind(p, tids[j]);
			if (td != NULL && i < max)
				sc_proc_kstack_one(td, &one, deadline);
			sc_proc_unlock(p);
			if (td == NULL)
				continue;	/* exited meanwhile */
			if (i < max) {
				kk = sc__kstack_elem(out, elsize, i, p,
				    one.tid, one.tdname);
				kk->state = one.state;
				sc_stack_copy(&one.stack, &kk->stack);
			}
			*n = ++i;
		}
		last = tids[nt - 1];
	}
	return (0);
}

/* capture_timeout_ns from now, the bound of a whole capture or listing
 * call (sc__ds_clock(); UINT64_MAX: none). */
uint64_t
sc__capture_deadline(const struct sc_machine *m)
{
	return (m->m_cfg.capture_timeout_ns == 0 ? UINT64_MAX :
	    sc__ds_clock() + (uint64_t)m->m_cfg.capture_timeout_ns);
}

int
sc_proc_kstack_sz(struct sc_proc *p, struct sc_kstack *out, size_t elsize,
    size_t max, size_t *n)
{
	/* Bad arguments are an error the caller can test, not misuse. */
	if (p == NULL || n == NULL || (out == NULL && max != 0) ||
	    elsize < SC__KSTACK_SIZE_V0)
		return (EINVAL);
	SC_KASSERT(!sc_proc_lock_owned(p), EINVAL,
	    "proc %d: proc lock already held", p->p_pid);
	SC_KASSERT(sc__spin_held_count() == 0, EINVAL,
	    "proc %d: the caller holds a spin lock (a thread lock?)",
	    p->p_pid);
	sc__ds_enter(p->p_machine);
	return (sc__proc_kstack_until(p, out, elsize, max, n,
	    sc__capture_deadline(p->p_machine)));
}
