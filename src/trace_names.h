/*
 * The names of the threads a trace talks about, for the JSON and the SVG
 * writers (trace_json.c, trace_svg.c): the records carry tids only.
 */
#ifndef SC_TRACE_NAMES_H
#define SC_TRACE_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "stackcap.h"

struct sc_trace_name {
	int		nm_tid;
	bool		nm_idle;	/* a CPU's idle thread */
	char		nm_name[32];
};

/* Every entry is the writer's own: nothing outlives its call. */
struct sc_trace_names {
	struct sc_trace_name *tn_v;
	size_t		tn_n;
};

/*
 * The names of the threads m still knows: those of its procs, and the
 * joined ones whose struct is not reused yet (a reused struct has a new
 * tid, so a tid found here is never another thread's).  ENOMEM when
 * nothing could be allocated; a shorter list when the list outgrew its
 * memory (the threads left out have no name).  Takes m's list lock.
 */
int	sc__trace_names_get(struct sc_machine *m, struct sc_trace_names *tn);
/* tid's entry, or NULL. */
const struct sc_trace_name *sc__trace_name(const struct sc_trace_names *tn,
	    int tid);
void	sc__trace_names_free(struct sc_trace_names *tn);

#endif /* !SC_TRACE_NAMES_H */
