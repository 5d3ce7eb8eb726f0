/*
 * Internal declarations shared by the library's sources (not installed).
 * Names with the sc__ prefix are internal and not exported.
 */
#ifndef SC_INTERNAL_H
#define SC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "stackcap.h"

/*
 * Per-pthread data used from the signal handler must use the initial-exec
 * TLS model: the general-dynamic model may allocate on first access from a
 * shared library, which is not async-signal-safe.
 */
#define SC_TLS_IE	__attribute__((tls_model("initial-exec")))

/* frame_bounds.c: sort r[0..n) by lo and merge overlaps; returns the new n. */
size_t	sc__ranges_sort_merge(struct sc_range *r, size_t n);

/* sched_sim.c: the kernel stack of the simulated thread running here, if
 * any; false on a plain pthread. */
bool	sc__curthread_kstack(struct sc_range *r);

#endif /* !SC_INTERNAL_H */
