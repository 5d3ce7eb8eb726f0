/*
 * The names of a trace's threads (trace_names.h).  FreeBSD's ktrace
 * records carry the command name in each header (ktr_comm of struct
 * ktr_header, sys/sys/ktrace.h); ours carry the tid only, and the name is
 * looked up when the trace is written.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "sc_internal.h"
#include "trace_names.h"

static bool
sc_tn_add(struct sc_trace_names *tn, size_t *cap, const struct sc_thread *td)
{
	struct sc_trace_name *nm;

	if (tn->tn_n == *cap) {
		nm = realloc(tn->tn_v, 2 * *cap * sizeof(*nm));
		if (nm == NULL)
			return (false);
		tn->tn_v = nm;
		*cap *= 2;
	}
	nm = &tn->tn_v[tn->tn_n++];
	nm->nm_tid = atomic_load(&td->td_tid);
	nm->nm_idle = td->td_idle;
	snprintf(nm->nm_name, sizeof(nm->nm_name), "%s", td->td_name);
	return (true);
}

int
sc__trace_names_get(struct sc_machine *m, struct sc_trace_names *tn)
{
	struct sc_proc *p;
	struct sc_thread *td;
	size_t cap = 64;

	tn->tn_n = 0;
	if ((tn->tn_v = calloc(cap, sizeof(*tn->tn_v))) == NULL)
		return (ENOMEM);
	/* (l): the lists, and a struct's name and tid, do not change. */
	sc__host_lock(&m->m_list_mtx);
	for (p = m->m_procs; p != NULL; p = p->p_next)
		TAILQ_FOREACH(td, &p->p_threads, td_plist)
			if (!sc_tn_add(tn, &cap, td))
				goto out;
	TAILQ_FOREACH(td, &m->m_thread_free, td_plist)
		if (!sc_tn_add(tn, &cap, td))
			break;
out:
	sc__host_unlock(&m->m_list_mtx);
	return (0);
}

const struct sc_trace_name *
sc__trace_name(const struct sc_trace_names *tn, int tid)
{
	size_t i;

	for (i = 0; i < tn->tn_n; i++)
		if (tn->tn_v[i].nm_tid == tid)
			return (&tn->tn_v[i]);
	return (NULL);
}

void
sc__trace_names_free(struct sc_trace_names *tn)
{
	free(tn->tn_v);
	tn->tn_v = NULL;
	tn->tn_n = 0;
}
