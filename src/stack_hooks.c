/*
 * Race-injection hooks: sc_machine_set_hook() and the points of the
 * protocol that call them (enum sc_hook_point).
 *
 * Kernel counterpart: none (docs/design.md, "Beyond the kernel").  A hook
 * runs at a named point of a capture, on the thread that reaches it, so
 * that a test or a scenario can widen one window of the protocol on
 * purpose.  Each point is also a scheduling point of deterministic mode
 * (sim_det.h).
 */
#include <stdlib.h>

#include "sc_internal.h"

void
sc_machine_set_hook(struct sc_machine *m, sc_hook_fn fn, void *arg)
{
	struct sc_hook *h = NULL, *old;

	if (fn != NULL) {
		h = calloc(1, sizeof(*h));
		SC_KASSERT(h != NULL, , "cannot allocate a hook");
		h->h_fn = fn;
		h->h_arg = arg;
	}
	old = atomic_exchange(&m->m_hook, h);
	if (old == NULL)
		return;
	sc__host_lock(&m->m_list_mtx);
	old->h_next = m->m_hooks_old;
	m->m_hooks_old = old;
	sc__host_unlock(&m->m_list_mtx);
}

void
sc__hook(struct sc_machine *m, enum sc_hook_point pt, struct sc_thread *td)
{
	struct sc_hook *h = atomic_load_explicit(&m->m_hook,
	    memory_order_acquire);

	if (h != NULL)
		h->h_fn(h->h_arg, pt, td);
	sc__ds_point();
}
