/*
 * Deterministic simulation: virtual time (sim_det.c has the whole
 * picture).  Time is the count of scheduling points passed, ds_step: one
 * step, one microsecond, read by sc__ds_clock() (sim_det.h) wherever the
 * library reads its clock (the bounds, the trace), so that a seed's run
 * does not depend on how fast the host runs it.
 *
 * No kernel counterpart.
 */
#include "sc_internal.h"
#include "sim_det_var.h"

#define SC_DS_MAX_STEPS	(50ull * 1000 * 1000)	/* then real concurrency */

/*
 * One step passes (the holder, at a point).  False past SC_DS_MAX_STEPS:
 * a livelock of the workload, since no bound of ours is that long.
 */
bool
sc__ds_tick(struct sc_ds *ds)
{
	ds->ds_step++;
	SC_CNT_INC(ds->ds_m, sim_steps);
	return (__builtin_expect(ds->ds_step < SC_DS_MAX_STEPS, 1));
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
