/*
 * The clock (cfg.hz), each figure beside a reference in the same run.
 *
 * 1. Ticks delivered per CPU against hz: a machine whose every CPU runs a
 *    spinner (bound to it) for a while; the clock interrupts handled
 *    (clock_intrs) and the ticks counted (the interrupts plus the
 *    periods that expired while a signal waited, si_overrun) per CPU,
 *    against hz * seconds.  Reference, on plain pthreads: the two ways of
 *    making the ticks, a POSIX timer per thread aimed at it
 *    (SIGEV_THREAD_ID, the library's; signals and overruns) and one timer
 *    thread that sleeps to each period's absolute end and tgkill()s every
 *    thread (each signal queued), with that thread's own CPU time per
 *    tick.
 * 2. The clock's cost on sc_yield() switches: two threads ping-pong on one
 *    CPU, ns per switch with hz = 1000 against hz = 0.
 * 3. The clock's cost on a running capture's round trip: a spinner bound
 *    to cpu1, captured from a plain pthread, ns per capture with hz = 1000
 *    against hz = 0.
 *
 * Best of ROUNDS rounds each, the ratios in one run.  Nothing asserts.
 *
 * usage: bench_clock [iterations]   (switches and captures per round,
 *                                    default 20000; 1 also shortens the
 *                                    tick runs, for the smoke test)
 */
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench_util.h"

#define ROUNDS	5

static long	iters = 20000;

static struct sc_machine *
machine(int ncpu, int hz)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	int error;

	sc_machine_config_init(&cfg);
	cfg.ncpu = ncpu;
	cfg.hz = hz;
	if ((error = sc_machine_create(&cfg, &m)) != 0)
		die("sc_machine_create", error);
	return (m);
}

static struct sc_counters
counters(struct sc_machine *m)
{
	struct sc_counters c;

	sc_machine_counters_sz(m, &c, sizeof(c));
	return (c);
}

static double
best(double *v)
{
	qsort(v, ROUNDS, sizeof(v[0]), dbl_cmp);
	return (v[0]);
}

/* ------------------------------------------------------------------------
 * 1. Ticks
 * ------------------------------------------------------------------------ */

struct spin {
	int		cpu;
	atomic_int	*stop;
};

static void
spin_thread(void *arg)
{
	struct spin *s = arg;

	(void)sc_sched_bind(s->cpu);
	while (!atomic_load_explicit(s->stop, memory_order_relaxed))
		__builtin_ia32_pause();
}

/* The ticks counted on m's CPUs (hardclock()'s cnt). */
static uint64_t
machine_ticks_counted(struct sc_machine *m, int ncpu)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < ncpu; i++)
		n += atomic_load(&m->m_pcpu[i].pc_ticks);
	return (n);
}

/* Interrupts handled per CPU / expected over ms milliseconds; *counted:
 * ticks counted / expected. */
static double
machine_ticks(int ncpu, int hz, long ms, double *counted)
{
	struct spin s[8];
	struct sc_thread *td[8];
	struct sc_machine *m = machine(ncpu, hz);
	struct sc_proc *p;
	atomic_int stop = 0;
	uint64_t c0, c1, k0, k1;
	double t0, t1;
	int i;

	if (sc_proc_create(m, "bench", &p) != 0)
		die("sc_proc_create", ENOMEM);
	for (i = 0; i < ncpu; i++) {
		s[i].cpu = i;
		s[i].stop = &stop;
		if (sc_thread_create(p, "spin", spin_thread, &s[i], &td[i]))
			die("sc_thread_create", ENOMEM);
	}
	(void)nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);
	c0 = counters(m).clock_intrs;
	k0 = machine_ticks_counted(m, ncpu);
	t0 = now_ns();
	(void)nanosleep(&(struct timespec){ ms / 1000,
	    (ms % 1000) * 1000 * 1000 }, NULL);
	c1 = counters(m).clock_intrs;
	k1 = machine_ticks_counted(m, ncpu);
	t1 = now_ns();
	atomic_store(&stop, 1);
	for (i = 0; i < ncpu; i++)
		(void)sc_thread_join(td[i]);
	sc_machine_destroy(m);
	*counted = (double)(k1 - k0) / ncpu / ((double)hz * (t1 - t0) / 1e9);
	return ((double)(c1 - c0) / ncpu / ((double)hz * (t1 - t0) / 1e9));
}

/* The reference: plain pthreads that count the ticks they get. */
static _Thread_local atomic_long *tick_count;

static void
tick_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (tick_count != NULL)
		atomic_fetch_add_explicit(tick_count, 1 + (si->si_code ==
		    SI_TIMER ? si->si_overrun : 0), memory_order_relaxed);
}

struct ref {
	atomic_long	ticks;
	atomic_int	tid;
	atomic_int	*stop;
	bool		own_timer;
	int		hz;
};

static void *
ref_thread(void *arg)
{
	struct ref *r = arg;
	struct sigevent sev;
	struct itimerspec its;
	timer_t t;

	tick_count = &r->ticks;
	atomic_store(&r->tid, (int)syscall(SYS_gettid));
	if (r->own_timer) {
		memset(&sev, 0, sizeof(sev));
		sev.sigev_notify = SIGEV_THREAD_ID;
		sev.sigev_signo = SIGRTMIN + 5;
		sev._sigev_un._tid = atomic_load(&r->tid);
		if (timer_create(CLOCK_MONOTONIC, &sev, &t) != 0)
			die("timer_create", errno);
		memset(&its, 0, sizeof(its));
		its.it_value.tv_nsec = 1000000000L / r->hz;
		its.it_interval = its.it_value;
		(void)timer_settime(t, 0, &its, NULL);
	}
	while (!atomic_load_explicit(r->stop, memory_order_relaxed))
		__builtin_ia32_pause();
	if (r->own_timer)
		(void)timer_delete(t);
	tick_count = NULL;
	return (NULL);
}

/*
 * n spinning pthreads, ticked at hz for ms milliseconds either by their
 * own timers or by one timer thread (this one): the fraction of the
 * expected ticks delivered, and the timer thread's CPU time per tick (ns;
 * 0 with their own timers).
 */
static double
ref_ticks(int n, int hz, long ms, bool own_timer, double *cpu_per_tick)
{
	struct ref r[8];
	pthread_t th[8];
	atomic_int stop = 0;
	struct timespec next, c0, c1;
	long period = 1000000000L / hz, total = 0;
	double t0, t1;
	int i, pid = getpid();

	for (i = 0; i < n; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i].stop = &stop;
		r[i].own_timer = own_timer;
		r[i].hz = hz;
		if (pthread_create(&th[i], NULL, ref_thread, &r[i]) != 0)
			die("pthread_create", EAGAIN);
	}
	for (i = 0; i < n; i++)
		while (atomic_load(&r[i].tid) == 0)
			sched_yield();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	t0 = now_ns();
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (now_ns() - t0 < (double)ms * 1e6) {
		if (own_timer) {
			(void)nanosleep(&(struct timespec){ 0, 10 * 1000 *
			    1000 }, NULL);
			continue;
		}
		next.tv_nsec += period;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		(void)clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next,
		    NULL);
		for (i = 0; i < n; i++)
			(void)syscall(SYS_tgkill, pid, atomic_load(&r[i].tid),
			    SIGRTMIN + 5);
	}
	t1 = now_ns();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	atomic_store(&stop, 1);
	for (i = 0; i < n; i++) {
		(void)pthread_join(th[i], NULL);
		total += atomic_load(&r[i].ticks);
	}
	*cpu_per_tick = own_timer ? 0 : ((double)(c1.tv_sec - c0.tv_sec) *
	    1e9 + (double)(c1.tv_nsec - c0.tv_nsec)) / (double)(total > 0 ?
	    total : 1);
	return ((double)total / n / ((double)hz * (t1 - t0) / 1e9));
}

/* ------------------------------------------------------------------------
 * 2. Switches
 * ------------------------------------------------------------------------ */

struct pingpong {
	long		n;
	atomic_int	ready, done;
};

static void
pingpong_thread(void *arg)
{
	struct pingpong *pp = arg;
	long i;

	atomic_fetch_add(&pp->ready, 1);
	while (atomic_load(&pp->ready) < 2)
		sc_yield();
	for (i = 0; i < pp->n; i++)
		sc_yield();
	atomic_fetch_add(&pp->done, 1);
}

/* ns per switch of a ping-pong of n yields each on one CPU. */
static double
switch_ns(int hz)
{
	struct sc_machine *m = machine(1, hz);
	struct pingpong pp = { .n = iters };
	struct sc_thread *a, *b;
	struct sc_proc *p;
	uint64_t s0;
	double t0, t1;

	if (sc_proc_create(m, "bench", &p) != 0)
		die("sc_proc_create", ENOMEM);
	s0 = counters(m).switches;
	t0 = now_ns();
	if (sc_thread_create(p, "ping", pingpong_thread, &pp, &a) != 0 ||
	    sc_thread_create(p, "pong", pingpong_thread, &pp, &b) != 0)
		die("sc_thread_create", ENOMEM);
	(void)sc_thread_join(a);
	(void)sc_thread_join(b);
	t1 = now_ns();
	s0 = counters(m).switches - s0;
	sc_machine_destroy(m);
	return ((t1 - t0) / (double)s0);
}

/* ------------------------------------------------------------------------
 * 3. Captures of a running thread
 * ------------------------------------------------------------------------ */

static double
capture_ns(int hz)
{
	struct sc_machine *m = machine(2, hz);
	atomic_int stop = 0;
	struct spin s = { .cpu = 1, .stop = &stop };
	struct sc_thread *td;
	struct sc_proc *p;
	struct sc_stack st;
	uint64_t running;
	double t0, t1;
	long i, ok = 0;

	if (sc_proc_create(m, "bench", &p) != 0 ||
	    sc_thread_create(p, "spin", spin_thread, &s, &td) != 0)
		die("setup", ENOMEM);
	/* On cpu1, where it binds itself: RUNNING before the bind is not
	 * enough (it may be between the CPUs when the loop starts, and a
	 * capture off a CPU is a pcb walk, not an IPI's round trip). */
	while (sc_thread_state(td) != SC_TDS_RUNNING ||
	    sc_thread_oncpu(td) != s.cpu)
		sched_yield();
	running = counters(m).captures_running;
	t0 = now_ns();
	for (i = 0; i < iters; i++) {
		sc_proc_lock(p);
		sc_thread_lock(td);
		ok += sc_stack_save_td(&st, td) == 0;
		sc_thread_unlock(td);
		sc_proc_unlock(p);
	}
	t1 = now_ns();
	running = counters(m).captures_running - running;
	atomic_store(&stop, 1);
	(void)sc_thread_join(td);
	sc_machine_destroy(m);
	if (ok == 0)
		die("no capture succeeded", EIO);
	if (running != (uint64_t)iters)
		fprintf(stderr, "bench_clock: %ju of %ld captures found the "
		    "spinner running\n", (uintmax_t)running, iters);
	return ((t1 - t0) / (double)iters);
}

int
main(int argc, char **argv)
{
	static const int hzs[] = { 100, 1000, 5000, 10000, 20000 };
	double a[ROUNDS], b[ROUNDS], own, thr, own_cpu, thr_cpu, counted = 0;
	long ms;
	int ncpu, i, r;
	struct sigaction sa;

	if (argc > 1)
		iters = atol(argv[1]);
	if (iters < 1)
		iters = 1;
	ms = iters < 1000 ? 50 : 500;
	ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	ncpu = ncpu < 1 ? 1 : ncpu > 8 ? 8 : ncpu;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = tick_handler;
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	(void)sigaction(SIGRTMIN + 5, &sa, NULL);

	printf("1. ticks delivered / expected, %d CPUs (host cores), %ld ms"
	    " each\n", ncpu, ms);
	printf("   %6s %9s %9s %13s %13s %11s\n", "hz", "m.intrs",
	    "m.ticks", "timer/thread", "timer thread", "thr ns/tick");
	for (i = 0; i < (int)(sizeof(hzs) / sizeof(hzs[0])); i++) {
		own = ref_ticks(ncpu, hzs[i], ms, true, &own_cpu);
		thr = ref_ticks(ncpu, hzs[i], ms, false, &thr_cpu);
		if (hzs[i] <= SC_HZ_MAX) {
			own_cpu = machine_ticks(ncpu, hzs[i], ms, &counted);
			printf("   %6d %9.3f %9.3f", hzs[i], own_cpu, counted);
		} else
			printf("   %6d %9s %9s", hzs[i], "-", "-");
		printf(" %13.3f %13.3f %11.0f\n", own, thr, thr_cpu);
	}

	for (r = 0; r < ROUNDS; r++) {
		a[r] = switch_ns(0);
		b[r] = switch_ns(1000);
	}
	own = best(a);
	thr = best(b);
	printf("2. sc_yield() switch, 1 CPU: hz=0 %.0f ns, hz=1000 %.0f ns, "
	    "ratio %.3f\n", own, thr, thr / own);

	for (r = 0; r < ROUNDS; r++) {
		a[r] = capture_ns(0);
		b[r] = capture_ns(1000);
	}
	own = best(a);
	thr = best(b);
	printf("3. capture of a running thread: hz=0 %.0f ns, hz=1000 %.0f "
	    "ns, ratio %.3f\n", own, thr, thr / own);
	return (0);
}
