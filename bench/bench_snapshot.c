/*
 * bench_snapshot: the whole machine in one round, and captures that do not
 * wait for each other, against their serial forms in the same run.
 *
 * P4.  R CPUs (R = 2, 4, 8; simulated CPUs may outnumber the cores), each
 *      running a spinner bound to it, in a call chain of its own depth.
 *      Three series, measured in interleaved blocks: one running capture
 *      (proc lock, thread lock, sc_stack_save_td()); R such captures one
 *      after another (what the kernel's procstat -kk -a costs); one
 *      sc_machine_snapshot() of the whole machine (R spinners, R idle
 *      threads).  Medians; ratios snapshot/one (goal: at most 2.0x) and
 *      serial/one.
 * P7.  K plain requesters (K = 1, 2, 4), each capturing, for a while, a
 *      running thread of its own process on a CPU of its own: captures a
 *      second with per-CPU slots, and with capture_serial = 1 (the kernel's
 *      intr_lock), alternately in the same run.
 *
 * The spinners call sched_yield() as they spin: with more simulated CPUs
 * than cores, each CPU pthread then gets a core often, as a real CPU
 * always has one; without it an IPI waits for the host's time slice.
 *
 * usage: bench_snapshot [SAMPLES]   (per series and R, default 2000;
 *        P7 runs SAMPLES / 4 ms per point)
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"

#define MAXR		8
#define BLOCK		50	/* samples of a series in a row */

struct bs_spin {
	int		cpu;
	atomic_int	running;
};

static atomic_int bs_stop;

static SC_NOIPA void
bs_spin_at(struct bs_spin *s, int depth)
{
	if (depth > 0) {
		bs_spin_at(s, depth - 1);
		SC_BARRIER();
		return;
	}
	atomic_store(&s->running, 1);
	while (!atomic_load(&bs_stop))
		sched_yield();
	SC_BARRIER();
}

/* Bound to its CPU, at a depth of its own: a chain of its own. */
static void
bs_spin_main(void *arg)
{
	struct bs_spin *s = arg;

	(void)sc_sched_bind(s->cpu);
	bs_spin_at(s, 2 + s->cpu);
}

struct bs_world {
	struct sc_machine *m;
	struct sc_proc	*p[MAXR];
	struct sc_thread *td[MAXR];
	struct bs_spin	s[MAXR];
	int		n;
};

/* A machine of ncpu CPUs with n spinners, each in a process of its own. */
static void
bs_world_make(struct bs_world *w, int ncpu, int n, int serial)
{
	struct sc_machine_config cfg;
	char name[16];
	int error, i;

	sc_machine_config_init(&cfg);
	cfg.ncpu = ncpu;
	cfg.capture_serial = serial;
	if ((error = sc_machine_create(&cfg, &w->m)) != 0)
		die("sc_machine_create", error);
	atomic_store(&bs_stop, 0);
	w->n = n;
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "spin%d", i);
		w->s[i].cpu = i;
		atomic_store(&w->s[i].running, 0);
		if ((error = sc_proc_create(w->m, name, &w->p[i])) != 0 ||
		    (error = sc_thread_create(w->p[i], name, bs_spin_main,
		    &w->s[i], &w->td[i])) != 0)
			die("sc_thread_create", error);
	}
	for (i = 0; i < n; i++)
		while (!atomic_load(&w->s[i].running) ||
		    sc_thread_oncpu(w->td[i]) != i)
			sched_yield();
}

static void
bs_world_free(struct bs_world *w)
{
	int i;

	atomic_store(&bs_stop, 1);
	for (i = 0; i < w->n; i++)
		(void)sc_thread_join(w->td[i]);
	sc_machine_destroy(w->m);
}

static int
bs_capture(struct bs_world *w, int i)
{
	struct sc_stack st;

	return (sc_stack_save_td_locked(w->p[i], w->td[i], &st));
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), dbl_cmp);
	return (v[n / 2]);
}

static void
p4(int r, int samples)
{
	static struct sc_kstack kk[4 * MAXR];
	struct bs_world w;
	double *one, *ser, *snap, t0;
	int i, k, done, bad = 0;
	size_t n;

	one = calloc((size_t)samples, sizeof(*one));
	ser = calloc((size_t)samples, sizeof(*ser));
	snap = calloc((size_t)samples, sizeof(*snap));
	if (one == NULL || ser == NULL || snap == NULL)
		die("calloc", ENOMEM);
	bs_world_make(&w, r, r, 0);
	for (done = 0; done < samples; done += BLOCK) {
		for (i = done; i < done + BLOCK && i < samples; i++) {
			t0 = now_ns();
			bad += bs_capture(&w, i % r) != 0;
			one[i] = now_ns() - t0;
		}
		for (i = done; i < done + BLOCK && i < samples; i++) {
			t0 = now_ns();
			for (k = 0; k < r; k++)
				bad += bs_capture(&w, k) != 0;
			ser[i] = now_ns() - t0;
		}
		for (i = done; i < done + BLOCK && i < samples; i++) {
			t0 = now_ns();
			bad += sc_machine_snapshot(w.m, kk, 4 * MAXR, &n) != 0;
			snap[i] = now_ns() - t0;
			for (k = 0; k < (int)n; k++)
				bad += kk[k].state != SC_KKST_STATE_STACKOK;
		}
	}
	printf("  R=%d: one capture %7.1f us | %d serial %7.1f us (%.2fx) | "
	    "snapshot %7.1f us (%.2fx one, %.2fx faster than serial)%s\n",
	    r, median(one, samples) / 1e3, r, median(ser, samples) / 1e3,
	    median(ser, samples) / median(one, samples),
	    median(snap, samples) / 1e3,
	    median(snap, samples) / median(one, samples),
	    median(ser, samples) / median(snap, samples),
	    bad != 0 ? " (some captures failed)" : "");
	bs_world_free(&w);
	free(one);
	free(ser);
	free(snap);
}

struct bs_req {
	struct bs_world	*w;
	int		i;
	double		until;
	long		n;
	long		bad;
};

static void *
bs_req_main(void *arg)
{
	struct bs_req *q = arg;

	while (now_ns() < q->until) {
		q->bad += bs_capture(q->w, q->i) != 0;
		q->n++;
	}
	return (NULL);
}

/* Captures a second of k requesters on a machine of 4 CPUs. */
static double
p7_rate(int k, int serial, double ms, long *bad)
{
	struct bs_req q[MAXR];
	pthread_t th[MAXR];
	struct bs_world w;
	double t0, total = 0;
	int i;

	bs_world_make(&w, 4, k, serial);
	t0 = now_ns();
	for (i = 0; i < k; i++) {
		q[i] = (struct bs_req){ &w, i, t0 + ms * 1e6, 0, 0 };
		if (pthread_create(&th[i], NULL, bs_req_main, &q[i]) != 0)
			die("pthread_create", EAGAIN);
	}
	for (i = 0; i < k; i++) {
		(void)pthread_join(th[i], NULL);
		total += (double)q[i].n;
		*bad += q[i].bad;
	}
	t0 = now_ns() - t0;
	/* Every capture must have been of a running thread, by an IPI. */
	if (sc_counters_get(w.m).captures_running != (uint64_t)total) {
		fprintf(stderr, "K=%d serial=%d: %ju running of %.0f\n", k,
		    serial, (uintmax_t)sc_counters_get(w.m).captures_running,
		    total);
		*bad += 1;
	}
	bs_world_free(&w);
	return (total / (t0 / 1e9));
}

static void
p7(int k, int samples)
{
	double par = 0, ser = 0, ms = samples / 4.0;
	long bad = 0;
	int rep;

	/* Alternately, twice each, so that load spreads over both. */
	for (rep = 0; rep < 2; rep++) {
		par += p7_rate(k, 0, ms / 2, &bad);
		ser += p7_rate(k, 1, ms / 2, &bad);
	}
	printf("  K=%d: per-CPU slots %8.0f captures/s | capture_serial "
	    "%8.0f captures/s | %.2fx%s\n", k, par / 2, ser / 2, par / ser,
	    bad != 0 ? " (some captures failed)" : "");
}

int
main(int argc, char **argv)
{
	int samples = argc > 1 ? atoi(argv[1]) : 2000;
	int r, k;

	if (samples < 1) {
		fprintf(stderr, "usage: bench_snapshot [SAMPLES]\n");
		return (2);
	}
	printf("bench_snapshot: P4, %d samples a series (medians)\n", samples);
	for (r = 2; r <= MAXR; r *= 2)
		p4(r, samples);
	printf("bench_snapshot: P7, %.0f ms a point\n", samples / 4.0);
	for (k = 1; k <= 4; k *= 2)
		p7(k, samples);
	return (0);
}
