/*
 * The scheduler's costs, each beside a reference measured in the same run.
 *
 * 1. Context switch: two simulated threads on ONE simulated CPU ping-pong
 *    with sc_yield(); ns per switch counts the machine's `switches`
 *    counter.  References: glibc swapcontext() between two contexts (a
 *    userspace switch plus one sigprocmask system call), and a Linux thread
 *    switch (two pthreads pinned to one real CPU, ping-ponging through
 *    futexes).
 * 2. Off-CPU capture: sc_stack_save_td() of a sleeping thread (thread lock,
 *    checks, the walk from its pcb, unlock) at four chain depths from 7 to
 *    40 frames, fitted (least squares) as cost = fixed + per_frame * depth;
 *    reference: sc_stack_walk() over a real chain of the same depth on
 *    this thread's own stack, fitted the same way.
 *
 * Each figure is the best of ROUNDS rounds (the least disturbed by other
 * load), with the median beside it.  The ratios are what matter: absolute
 * times depend on the machine.
 *
 * usage: bench_sched [iterations]   (captures and walks per round,
 *                                    default 100000; switches: 2x that)
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "bench_util.h"
#include "sc_futex.h"		/* the library's futex wrappers */
#include "stackcap.h"


#define ROUNDS		7
#define NDEPTH		4	/* sleepers: 0, 11, 22, 33 extra chain
				   frames (7 to 40 captured) */
#define DEPTH_STEP	11

static long	iters = 100000;
static volatile uintptr_t sink;

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

struct stats {
	double	v[ROUNDS];
	double	best, median;
};

static void
stats_done(struct stats *s)
{
	qsort(s->v, ROUNDS, sizeof(s->v[0]), dbl_cmp);
	s->best = s->v[0];
	s->median = s->v[ROUNDS / 2];
}

/* sched: SC_SCHED_*, or -1 for the default (STACKCAP_SCHED). */
static struct sc_machine *
machine(int ncpu, int sched)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	int error;

	sc_machine_config_init(&cfg);
	cfg.ncpu = ncpu;
	if (sched >= 0)
		cfg.sched = sched;
	if ((error = sc_machine_create(&cfg, &m)) != 0)
		die("sc_machine_create", error);
	return (m);
}

static uint64_t
switches(struct sc_machine *m)
{
	struct sc_counters c;

	sc_machine_counters(m, &c);
	return (c.switches);
}

/* ------------------------------------------------------------------------
 * 1. Context switches
 * ------------------------------------------------------------------------ */

/* One round of the sc_yield() ping-pong: the first thread through the gate
 * starts the clock, the first one done stops it. */
struct pingpong {
	struct sc_machine *m;
	long		n;		/* yields per thread */
	atomic_int	ready, started, stopped;
	double		t0, t1;
	uint64_t	c0, c1;
};

static void
pingpong_thread(void *arg)
{
	struct pingpong *pp = arg;
	int zero;
	long i;

	atomic_fetch_add(&pp->ready, 1);
	while (atomic_load(&pp->ready) < 2)
		sc_yield();
	zero = 0;
	if (atomic_compare_exchange_strong(&pp->started, &zero, 1)) {
		pp->c0 = switches(pp->m);
		pp->t0 = now_ns();
	}
	for (i = 0; i < pp->n && !atomic_load(&pp->stopped); i++)
		sc_yield();
	zero = 0;
	if (atomic_compare_exchange_strong(&pp->stopped, &zero, 1)) {
		pp->t1 = now_ns();
		pp->c1 = switches(pp->m);
	}
}

/* ns per sc_yield() switch; *nsw: the switches counted. */
static double
round_sc_yield(struct sc_machine *m, struct sc_proc *p, uint64_t *nsw)
{
	struct pingpong pp;
	struct sc_thread *a, *b;
	int error;

	memset(&pp, 0, sizeof(pp));
	pp.m = m;
	pp.n = 2 * iters;
	if ((error = sc_thread_create(p, "ping", pingpong_thread, &pp,
	    &a)) != 0 ||
	    (error = sc_thread_create(p, "pong", pingpong_thread, &pp,
	    &b)) != 0)
		die("sc_thread_create", error);
	sc_thread_join(a);
	sc_thread_join(b);
	*nsw = pp.c1 - pp.c0;
	return ((pp.t1 - pp.t0) / (double)(pp.c1 - pp.c0));
}

/* swapcontext() ping-pong between the main context and one other. */
static ucontext_t uc_main, uc_other;
static long uc_n;

static void
uc_other_fn(void)
{
	for (;;)
		swapcontext(&uc_other, &uc_main);
}

static double
round_swapcontext(void)
{
	static char stack[64 * 1024] __attribute__((aligned(16)));
	double t0;
	long i;

	getcontext(&uc_other);
	uc_other.uc_stack.ss_sp = stack;
	uc_other.uc_stack.ss_size = sizeof(stack);
	uc_other.uc_link = NULL;
	makecontext(&uc_other, uc_other_fn, 0);
	uc_n = 2 * iters;
	t0 = now_ns();
	for (i = 0; i < uc_n / 2; i++)
		swapcontext(&uc_main, &uc_other);
	return ((now_ns() - t0) / (double)uc_n);
}

/* Two pthreads pinned to one CPU, handing a futex word back and forth. */
struct futex_pp {
	_Atomic uint32_t word;		/* whose turn: 0 or 1 */
	long		n;
};

static void
pin_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void
futex_turns(struct futex_pp *f, uint32_t me)
{
	long i;

	for (i = 0; i < f->n; i++) {
		while (atomic_load(&f->word) != me)
			(void)sc__futex_wait_raw(&f->word, 1 - me, 0);
		atomic_store(&f->word, 1 - me);
		sc__futex_wake_raw(&f->word, 1);
	}
}

static void *
futex_peer(void *arg)
{
	pin_cpu0();
	futex_turns(arg, 1);
	return (NULL);
}

static double
round_futex(void)
{
	struct futex_pp f;
	pthread_t peer;
	double t0, t;

	atomic_init(&f.word, 0);
	f.n = iters / 4 > 0 ? iters / 4 : 1;	/* a syscall each: slower */
	pin_cpu0();
	if (pthread_create(&peer, NULL, futex_peer, &f) != 0)
		die("pthread_create", EAGAIN);
	t0 = now_ns();
	futex_turns(&f, 0);
	pthread_join(peer, NULL);
	t = now_ns() - t0;
	return (t / (2.0 * (double)f.n));
}

static void
unpin(void)
{
	cpu_set_t set;
	long i, n = sysconf(_SC_NPROCESSORS_ONLN);

	CPU_ZERO(&set);
	for (i = 0; i < n && i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void
bench_switch(void)
{
	struct stats sw, sw4, uc, fx;
	struct sc_machine *m = machine(1, SC_SCHED_ULE);
	struct sc_machine *m4 = machine(1, SC_SCHED_4BSD);
	struct sc_proc *p, *p4;
	uint64_t nsw = 0, nsw4 = 0;
	int r, error;

	if ((error = sc_proc_create(m, "bench", &p)) != 0 ||
	    (error = sc_proc_create(m4, "bench", &p4)) != 0)
		die("sc_proc_create", error);
	for (r = 0; r < ROUNDS; r++) {
		sw.v[r] = round_sc_yield(m, p, &nsw);
		sw4.v[r] = round_sc_yield(m4, p4, &nsw4);
		uc.v[r] = round_swapcontext();
		fx.v[r] = round_futex();
		unpin();
	}
	sc_machine_destroy(m);
	sc_machine_destroy(m4);
	stats_done(&sw);
	stats_done(&sw4);
	stats_done(&uc);
	stats_done(&fx);

	printf("context switch (one simulated CPU, %ju switches a round):\n",
	    (uintmax_t)nsw);
	printf("  %-40s best %8.1f ns  median %8.1f ns\n",
	    "sc_yield() ping-pong, ULE, per switch", sw.best, sw.median);
	printf("  %-40s best %8.1f ns  median %8.1f ns\n",
	    "sc_yield() ping-pong, 4BSD, per switch", sw4.best, sw4.median);
	printf("  %-40s best %8.1f ns  median %8.1f ns\n",
	    "glibc swapcontext(), per switch", uc.best, uc.median);
	printf("  %-40s best %8.1f ns  median %8.1f ns\n",
	    "Linux threads on one CPU (futex)", fx.best, fx.median);
	printf("  ratio (best): sc_yield/swapcontext %.2fx, "
	    "sc_yield/Linux thread switch %.2fx, ULE/4BSD %.2fx\n",
	    sw.best / uc.best, sw.best / fx.best, sw.best / sw4.best);
}

/* ------------------------------------------------------------------------
 * 2. Off-CPU capture against a plain walk
 * ------------------------------------------------------------------------ */

struct sleeper {
	int		extra;		/* chain frames below the thread fn */
	atomic_int	asleep;
	atomic_int	stop;
	struct sc_thread *td;
};

SC_NOIPA static void
sleep_chain(struct sleeper *s, int n)
{
	if (n > 0)
		sleep_chain(s, n - 1);
	else {
		atomic_store(&s->asleep, 1);
		while (!atomic_load(&s->stop))
			sc_sleep(s, "bench");
	}
	SC_BARRIER();
}

static void
sleeper_thread(void *arg)
{
	struct sleeper *s = arg;

	sleep_chain(s, s->extra);
	SC_BARRIER();
}

static void
sleeper_start(struct sc_proc *p, struct sleeper *s, int extra)
{
	int error, n;

	memset(s, 0, sizeof(*s));
	s->extra = extra;
	if ((error = sc_thread_create(p, "sleeper", sleeper_thread, s,
	    &s->td)) != 0)
		die("sc_thread_create", error);
	for (n = 0; n < 10000; n++) {
		if (atomic_load(&s->asleep) &&
		    sc_thread_state(s->td) == SC_TDS_INHIBITED &&
		    (sc_thread_inhibitors(s->td) & SC_TDI_SLEEPING) != 0)
			return;
		usleep(1000);
	}
	die("sleeper did not fall asleep", ETIMEDOUT);
}

static void
sleeper_stop(struct sleeper *s)
{
	atomic_store(&s->stop, 1);
	while (!sc_thread_exited(s->td)) {
		sc_wakeup(s);
		usleep(1000);
	}
	sc_thread_join(s->td);
}

/* ns per capture (lock, sc_stack_save_td, unlock); *depth: frames. */
static double
round_capture(struct sleeper *s, int *depth)
{
	struct sc_stack st;
	double t0;
	long i;
	int error;

	t0 = now_ns();
	for (i = 0; i < iters; i++) {
		sc_thread_lock(s->td);
		error = sc_stack_save_td(&st, s->td);
		sc_thread_unlock(s->td);
		sink += (uintptr_t)error + st.pcs[0];
	}
	*depth = st.depth;
	return ((now_ns() - t0) / (double)iters);
}

/* The walk reference: at the bottom of `n` extra frames on this stack,
 * time sc_stack_walk() from this frame, ROUNDS rounds. */
struct walk_result {
	struct stats	ns;
	int		depth;
};

SC_NOIPA static void
walk_bottom(struct walk_result *wr)
{
	const struct sc_range *text;
	struct sc_range stack = own_stack();
	struct sc_stack st;
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
	size_t ntext;
	double t0;
	long i;
	int r;

	sc_text_ranges(&text, &ntext);
	wr->depth = sc_stack_walk(&st, fp, stack, text, ntext);
	for (r = 0; r < ROUNDS; r++) {
		t0 = now_ns();
		for (i = 0; i < iters; i++) {
			sc_stack_walk(&st, fp, stack, text, ntext);
			sink += st.pcs[0];
		}
		wr->ns.v[r] = (now_ns() - t0) / (double)iters;
	}
	stats_done(&wr->ns);
	SC_BARRIER();
}

SC_NOIPA static void
walk_chain(struct walk_result *wr, int n)
{
	if (n > 0)
		walk_chain(wr, n - 1);
	else
		walk_bottom(wr);
	SC_BARRIER();
}

/* A walk of exactly `depth` frames, if this stack can give it. */
static void
walk_at_depth(struct walk_result *wr, int depth)
{
	int base;

	walk_chain(wr, 0);
	base = wr->depth;
	walk_chain(wr, depth > base ? depth - base : 0);
}

struct fit {
	double	fixed, per_frame;
};

/* Least squares of y = fixed + per_frame * x over n points. */
static struct fit
fit_line(const double *y, const int *x, int n)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0;
	struct fit f;
	int i;

	for (i = 0; i < n; i++) {
		sx += x[i];
		sy += y[i];
		sxx += (double)x[i] * x[i];
		sxy += (double)x[i] * y[i];
	}
	f.per_frame = (n * sxy - sx * sy) / (n * sxx - sx * sx);
	f.fixed = (sy - f.per_frame * sx) / n;
	return (f);
}

static void
print_capture(const char *what, int depth, const struct stats *s)
{
	printf("  %-34s depth %2d  best %7.1f ns  median %7.1f ns\n", what,
	    depth, s->best, s->median);
}

static void
report_capture(const struct stats *cap, const int *depth,
    const struct walk_result *wr)
{
	double ybest[NDEPTH], wbest[NDEPTH];
	int wdepth[NDEPTH], i;
	struct fit fc, fw;

	printf("off-CPU capture (a sleeping thread; lock + "
	    "sc_stack_save_td + unlock):\n");
	for (i = 0; i < NDEPTH; i++) {
		print_capture("sc_stack_save_td, sleeper", depth[i], &cap[i]);
		print_capture("sc_stack_walk, own stack", wr[i].depth,
		    &wr[i].ns);
		ybest[i] = cap[i].best;
		wbest[i] = wr[i].ns.best;
		wdepth[i] = wr[i].depth;
	}
	fc = fit_line(ybest, depth, NDEPTH);
	fw = fit_line(wbest, wdepth, NDEPTH);
	printf("  fit (best): capture %.1f ns + %.2f ns/frame; "
	    "walk %.1f ns + %.2f ns/frame\n", fc.fixed, fc.per_frame,
	    fw.fixed, fw.per_frame);
	printf("  ratio capture/walk: per frame %.2fx, at depth %d %.2fx, "
	    "at depth %d %.2fx; fixed cost over a walk %.1f ns\n",
	    fc.per_frame / fw.per_frame, depth[0], cap[0].best /
	    wr[0].ns.best, depth[NDEPTH - 1], cap[NDEPTH - 1].best /
	    wr[NDEPTH - 1].ns.best, fc.fixed - fw.fixed);
}

static void
bench_capture(void)
{
	struct sc_machine *m = machine(2, -1);
	struct sleeper sl[NDEPTH];
	struct stats cap[NDEPTH];
	struct walk_result wr[NDEPTH];
	struct sc_proc *p;
	int depth[NDEPTH];
	int i, r, error;

	if ((error = sc_proc_create(m, "bench", &p)) != 0)
		die("sc_proc_create", error);
	for (i = 0; i < NDEPTH; i++) {
		sleeper_start(p, &sl[i], i * DEPTH_STEP);
		round_capture(&sl[i], &depth[i]);	/* warm up */
	}
	/* Interleaved, so that load from other processes spreads evenly. */
	for (r = 0; r < ROUNDS; r++)
		for (i = 0; i < NDEPTH; i++)
			cap[i].v[r] = round_capture(&sl[i], &depth[i]);
	for (i = 0; i < NDEPTH; i++) {
		stats_done(&cap[i]);
		walk_at_depth(&wr[i], depth[i]);
		sleeper_stop(&sl[i]);
	}
	sc_machine_destroy(m);
	report_capture(cap, depth, wr);
}

int
main(int argc, char **argv)
{
	if (argc > 1 && (iters = strtol(argv[1], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: %s [iterations]\n", argv[0]);
		return (2);
	}
	printf("bench_sched: %d rounds, %ld captures/walks a round; "
	    "best of rounds (median)\n", ROUNDS, iters);
	bench_switch();
	bench_capture();
	return (0);
}
