/*
 * bench_det: deterministic mode (cfg.seed) against real concurrency, the
 * same work in the same run.  The work is a 3-thread capture: two
 * spinners in a call chain of their own and the bench thread, which
 * captures each 4 times.  Two forms: a machine made and destroyed for
 * each run (what an explorer does), and the body alone on one machine.
 * Deterministic mode runs twice: as it is (its actors on one host core)
 * and with STACKCAP_SIM_PIN=0 (where Linux puts them).  The clock's cost:
 * the machine-each-run form again with cfg.hz = 0, both modes (the
 * default hz is 1000; in deterministic mode a tick is virtual).
 *
 * usage: bench_det [RUNS]   (default 200 runs a form, 3 rounds)
 * Prints runs per second and the deterministic/real time ratio.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "stackcap.h"
#include "stackcap/testing.h"

#define ROUNDS		3
#define NCAPTURES	4

static atomic_int bd_stop;
static int bd_hz = -1;		/* cfg.hz; -1: the default */

static SC_NOIPA void
bd_spin(void *arg)
{
	(void)arg;
	while (!atomic_load(&bd_stop))
		sc_maybe_yield();
	SC_BARRIER();
}

static void
die(const char *what, int error)
{
	fprintf(stderr, "bench_det: %s: %s\n", what, sc_errname(error));
	exit(1);
}

static struct sc_machine *
bd_machine(uint64_t seed)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	int error;

	sc_machine_config_init(&cfg);
	cfg.seed = seed;
	if (bd_hz >= 0)
		cfg.hz = bd_hz;
	if ((error = sc_machine_create(&cfg, &m)) != 0)
		die("sc_machine_create", error);
	return (m);
}

/* The body on m: two spinners, each captured NCAPTURES times. */
static void
bd_body(struct sc_machine *m)
{
	struct sc_proc *p;
	struct sc_thread *td[2];
	struct sc_stack st;
	int error, i, k;

	atomic_store(&bd_stop, 0);
	if ((error = sc_proc_create(m, "bench", &p)) != 0)
		die("sc_proc_create", error);
	for (i = 0; i < 2; i++)
		if ((error = sc_thread_create(p, "spin", bd_spin, NULL,
		    &td[i])) != 0)
			die("sc_thread_create", error);
	/* Both running (the machine has a CPU for each): a capture of a
	 * thread that has not run yet is no IPI, and real mode's runs were
	 * then up to 20 times faster than the work measured. */
	for (i = 0; i < 2; i++)
		while (sc_thread_state(td[i]) != SC_TDS_RUNNING) {
			sc_maybe_yield();	/* deterministic: a point */
			sched_yield();		/* real: the host's core */
		}
	for (k = 0; k < NCAPTURES; k++)
		for (i = 0; i < 2; i++)
			(void)sc_stack_save_td_locked(p, td[i], &st);
	atomic_store(&bd_stop, 1);
	for (i = 0; i < 2; i++)
		(void)sc_thread_join(td[i]);
}

/* runs of the body, each on a machine of its own; seconds. */
static double
bd_each(int runs, bool det)
{
	uint64_t t0 = sc_now_ns();
	struct sc_machine *m;
	int r;

	for (r = 0; r < runs; r++) {
		m = bd_machine(det ? (uint64_t)r + 1 : 0);
		bd_body(m);
		sc_machine_destroy(m);
	}
	return ((double)(sc_now_ns() - t0) / 1e9);
}

/* runs of the body on one machine; seconds, and steps a run. */
static double
bd_one(int runs, bool det, double *steps)
{
	struct sc_machine *m = bd_machine(det ? 7 : 0);
	struct sc_counters c;
	uint64_t t0 = sc_now_ns();
	double t;
	int r;

	for (r = 0; r < runs; r++)
		bd_body(m);
	t = (double)(sc_now_ns() - t0) / 1e9;
	sc_machine_counters(m, &c);
	*steps = (double)c.sim_steps / runs;
	sc_machine_destroy(m);
	return (t);
}

/* Deterministic mode's actors on one core (pin) or where Linux likes. */
static void
bd_pin(bool pin)
{
	if (pin)
		unsetenv("STACKCAP_SIM_PIN");
	else
		setenv("STACKCAP_SIM_PIN", "0", 1);
}

int
main(int argc, char **argv)
{
	double de, dn, re, d1, n1, r1, de0, re0, steps, unused;
	int round, runs = argc > 1 ? atoi(argv[1]) : 200;

	if (runs < 1) {
		fprintf(stderr, "usage: bench_det [RUNS]\n");
		return (2);
	}
	if (getenv("STACKCAP_SEED") != NULL) {
		fprintf(stderr, "bench_det: unset STACKCAP_SEED: it would "
		    "make the real runs deterministic too\n");
		return (2);
	}
	printf("bench_det: %d runs a form, %d rounds; 3-thread capture (2 "
	    "spinners, %d captures); det: actors on one core, unpinned: "
	    "STACKCAP_SIM_PIN=0\n", runs, ROUNDS, 2 * NCAPTURES);
	for (round = 0; round < ROUNDS; round++) {
		bd_pin(true);
		de = bd_each(runs, true);
		bd_pin(false);
		dn = bd_each(runs, true);
		re = bd_each(runs, false);
		bd_pin(true);
		d1 = bd_one(runs, true, &steps);
		bd_pin(false);
		n1 = bd_one(runs, true, &unused);
		r1 = bd_one(runs, false, &unused);
		bd_pin(true);
		bd_hz = 0;
		de0 = bd_each(runs, true);
		re0 = bd_each(runs, false);
		bd_hz = -1;
		printf("  machine each run: det %6.0f runs/s, unpinned %6.0f, "
		    "real %6.0f; det/real %.2fx\n", runs / de, runs / dn,
		    runs / re, de / re);
		printf("  body alone:       det %6.0f runs/s, unpinned %6.0f, "
		    "real %6.0f; det/real %.1fx (%.0f steps a run, %.2f us a "
		    "step)\n", runs / d1, runs / n1, runs / r1, d1 / r1, steps,
		    d1 / runs / steps * 1e6);
		printf("  the clock:        hz=0: det %6.0f runs/s, real "
		    "%6.0f; time hz=1000/hz=0: det %.2fx, real %.2fx\n",
		    runs / de0, runs / re0, de / de0, re / re0);
	}
	return (0);
}
