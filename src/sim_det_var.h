/*
 * Deterministic simulation, between its own files only (sim_det.c: a
 * machine's life and the pool; sim_det_actor.c: who the actors are;
 * sim_det_token.c: the run token and the points; sim_det_choose.c: the
 * seeded choice; sim_det_clock.c: virtual time).  The rest of the library
 * sees sim_det.h.
 */
#ifndef SC_SIM_DET_VAR_H
#define SC_SIM_DET_VAR_H

#include <sched.h>

#include "sc_internal.h"

/* The machines that one plain pthread may drive at once. */
#define SC_DS_MAXMEMB	16

/* This pthread's slot in sc__ds_self (sim_det_actor.c sets it). */
extern __thread int sc__ds_idx SC_TLS_IE;

/* sim_det_actor.c */
bool	sc__ds_orig_mask(cpu_set_t *mask);
void	sc__ds_adopt(struct sc_ds *ds, int i, const cpu_set_t *mask);
void	sc__ds_leave(void);
void	sc__ds_unpin(struct sc_machine *m);

/* sim_det_token.c */
void	sc__ds_point_exit(void);

/* sim_det_choose.c */
void	sc__ds_choose_init(struct sc_ds *ds,
	    const struct sc_machine_config *cfg);
void	sc__ds_prio_init(struct sc_ds *ds, int i);
void	sc__ds_prio_late(struct sc_ds *ds, int i);
int	sc__ds_choose(struct sc_ds *ds, int me, bool waiting);
bool	sc__ds_draw_ipi(struct sc_ds *ds);

/* sim_det_clock.c */
/* The watchdog looks at each machine's token holder this often, and says
 * once on stderr that the token has not moved for SC_DS_STUCK_NS. */
#define SC_DS_WATCH_NS	(500 * 1000L)
#define SC_DS_STUCK_NS	(10ull * 1000 * 1000 * 1000)
void	sc__ds_clock_init(struct sc_ds *ds);
bool	sc__ds_tick(struct sc_ds *ds);
void	sc__ds_spin_to_tick(struct sc_ds *ds);
void	sc__ds_watch(struct sc_ds *ds);
uint64_t sc__ds_step_after(const struct sc_ds *ds, long timeout_ns);

#endif /* !SC_SIM_DET_VAR_H */
