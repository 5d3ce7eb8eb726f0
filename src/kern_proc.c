/*
 * Processes: creation, the proc lock, the thread list, and
 * kern.proc.kstack.
 *
 * Kernel counterparts: sys/kern/kern_fork.c (a new proc), the PROC_LOCK()
 * macros of sys/sys/proc.h, sys/kern/kern_proc.c
 * (sysctl_kern_proc_kstack()).
 */
#include <errno.h>
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
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return (ENOMEM);
	p->p_machine = m;
	snprintf(p->p_comm, sizeof(p->p_comm), "%s", comm);
	sc__mtx_init(&p->p_mtx, "proc lock", &m->m_cnt.proc_lock_waits);
	p->p_threads_tail = &p->p_threads;
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
	sc__mtx_lock(&p->p_mtx);
}

void
sc_proc_unlock(struct sc_proc *p)
{
	sc__mtx_unlock(&p->p_mtx);
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
	for (td = p->p_threads; td != NULL; td = td->td_plist, i++)
		if (i < max)
			out[i] = td;
	sc__host_unlock(&p->p_machine->m_list_mtx);
	*n = i;
}

/* The thread after td in p's list (the first when td is NULL). */
static struct sc_thread *
sc_proc_next_thread(struct sc_proc *p, struct sc_thread *td)
{
	struct sc_thread *next;

	sc__host_lock(&p->p_machine->m_list_mtx);
	next = td == NULL ? p->p_threads : td->td_plist;
	sc__host_unlock(&p->p_machine->m_list_mtx);
	return (next);
}

/*
 * sysctl_kern_proc_kstack(): the proc lock keeps p's threads from exiting
 * or swapping; each thread lock, from starting or stopping to run while
 * its stack is read from the pcb.
 */
int
sc_proc_kstack(struct sc_proc *p, struct sc_kstack *out, size_t max,
    size_t *n)
{
	return (sc_proc_kstack_sz(p, out, SC__KSTACK_SIZE_V0, max, n));
}

int
sc_proc_kstack_sz(struct sc_proc *p, struct sc_kstack *out, size_t elsize,
    size_t max, size_t *n)
{
	struct sc_thread *td;
	struct sc_kstack *kk;
	size_t i = 0, known;

	SC_KASSERT(p != NULL && n != NULL && (out != NULL || max == 0), EINVAL,
	    "NULL argument");
	if (elsize < SC__KSTACK_SIZE_V0)
		return (EINVAL);
	/* The part of each element that this library knows of. */
	known = elsize < sizeof(*kk) ? elsize : sizeof(*kk);
	SC_KASSERT(!sc_proc_lock_owned(p), EINVAL,
	    "proc %d: proc lock already held", p->p_pid);
	SC_KASSERT(sc__spin_held_count() == 0, EINVAL,
	    "proc %d: the caller holds a spin lock (a thread lock?)",
	    p->p_pid);
	sc_proc_lock(p);
	for (td = sc_proc_next_thread(p, NULL); td != NULL;
	    td = sc_proc_next_thread(p, td)) {
		if (atomic_load(&td->td_state) == SC_TDS_INACTIVE)
			continue;
		if (i < max) {
			/* Elements are the caller's size apart. */
			kk = (struct sc_kstack *)(void *)((char *)out +
			    i * elsize);
			memset((char *)kk + SC__KSTACK_SIZE_V0, 0,
			    known - SC__KSTACK_SIZE_V0);
			kk->tid = td->td_tid;
			snprintf(kk->tdname, sizeof(kk->tdname), "%s",
			    td->td_name);
			sc_thread_lock(td);
			if (TD_IS_SWAPPED(td)) {
				kk->state = SC_KKST_STATE_SWAPPED;
				sc_stack_zero(&kk->stack);
			} else if (sc_stack_save_td(&kk->stack, td) == 0)
				kk->state = SC_KKST_STATE_STACKOK;
			else
				kk->state = SC_KKST_STATE_RUNNING;
			sc_thread_unlock(td);
		}
		i++;
	}
	sc_proc_unlock(p);
	*n = i;
	return (0);
}
