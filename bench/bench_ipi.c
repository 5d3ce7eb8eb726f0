/*
 * Capturing a running thread, against the raw signal round trip it is made
 * of, measured in one run on this machine.
 *
 * 1. Raw round trip between two plain pthreads: the sender sets a flag to
 *    0, sends a signal to a pthread that spins, and waits until the
 *    handler has stored 1 (release).  Three ways to wait, as the library
 *    has: spinning; spinning 20 us then sleeping on a futex that the
 *    handler wakes; sleeping at once.  The handler of the spinning variant
 *    does only the store; the others' also bump the futex word and wake
 *    the sender if it sleeps (exactly what the library's handler does).
 *    Each is sent once with pthread_kill(), as the library sends, and once
 *    with the tgkill system call alone.
 * 2. sc_stack_save_td() of a running thread (a spinner in a known chain on
 *    a one-CPU machine; the capturer holds the proc lock and the thread
 *    lock), one machine per wait strategy (SC_WAIT_SPIN, SC_WAIT_SPIN_SLEEP,
 *    SC_WAIT_SLEEP).  Each capture is timed from before the proc lock to
 *    after its unlock.
 * 3. The walk inside the handler: a raw pthread spins at the bottom of a
 *    deep chain; its handler times sc_stack_walk() (from the interrupted
 *    %rbp, as the library's handler walks), libunwind's unw_backtrace()
 *    and glibc's backtrace(), each on the same stack in the same handler.
 *    libunwind.so exports a backtrace() of its own, which interposes
 *    glibc's in every program linked with libunwind (so with stackcap):
 *    glibc's is looked up in libc.so.6 itself.
 *
 * The nine round-trip series (1 and 2) are measured in interleaved blocks,
 * so that load from other processes spreads evenly over them; only one
 * target spins at a time, the others sleep.  Median and 99th percentile of
 * `samples` each (sorted).  Targets (issue 4): capture median <= 1.10x the
 * best raw round-trip median, capture p99 <= 1.5x the raw p99.
 *
 * usage: bench_ipi [--same-cpu | --unpinned] [samples]
 *        (samples per series, default 20000; placement: see pin_self())
 */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <errno.h>
#include <libunwind.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "bench_util.h"
#include "sc_futex.h"		/* the library's futex wrappers */
#include "stackcap.h"


#define RAW_SIGNO	(SIGRTMIN + 4)	/* machines: SIGRTMIN + 2, 5, 6 */
#define SPIN_NS		5000		/* the library's default wait_spin_ns */
#define RAW_BOUND_NS	30e9		/* a raw round trip has no bound like
					   a capture's: only a hang dies */
#define BLOCK		250		/* samples of a series in a row */
#define BLOCK_WARMUP	10		/* ... after as many not counted */
#define WALK_DEPTH	40		/* frames of the in-handler walk */
#define WALK_REPS	8		/* walks of each kind per signal */
#define WALK_MAX	128
#define MAXSTRAT	3

static int	nsamples = 20000;

static const int all_strategies[MAXSTRAT] = { SC_WAIT_SPIN,
    SC_WAIT_SPIN_SLEEP, SC_WAIT_SLEEP };
/* The strategies measured: all, or all but SPIN on one CPU (there a
 * spinning requester only measures the scheduler's time slice). */
static const int *strategies = all_strategies;
static int	nstrat = MAXSTRAT;
static const char *const strategy_names[] = {
	[SC_WAIT_SPIN_SLEEP] = "SC_WAIT_SPIN_SLEEP",
	[SC_WAIT_SPIN] = "SC_WAIT_SPIN",
	[SC_WAIT_SLEEP] = "SC_WAIT_SLEEP",
};

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

struct dist {
	double	median, p99, min;
};

static struct dist
dist_of(double *v, int n)
{
	struct dist d;

	qsort(v, (size_t)n, sizeof(v[0]), dbl_cmp);
	d.min = v[0];
	d.median = v[n / 2];
	d.p99 = v[(n * 99) / 100];
	return (d);
}

static const char *
short_name(int strategy)
{
	return (strategy_names[strategy] + sizeof("SC_WAIT_") - 1);
}

static void
install(void (*handler)(int, siginfo_t *, void *))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (sigaction(RAW_SIGNO, &sa, NULL) != 0)
		die("sigaction", errno);
}

/*
 * Placement.  By default (cross) the targets (the raw pthread, each
 * machine's CPU pthread) run on CPU 1 and the requester on CPU 0: an IPI
 * crosses CPUs, as it does in the kernel.  --same-cpu puts every thread on
 * CPU 1; --unpinned lets Linux place them.  A pthread inherits the
 * affinity of the thread that creates it, so the requester pins itself to
 * the targets' CPU while it creates them.
 */
enum placement { PLACE_CROSS, PLACE_SAME, PLACE_FREE };
static enum placement placement = PLACE_CROSS;
static const char *const placement_names[] = {
	[PLACE_CROSS] = "targets on CPU 1, requester on CPU 0",
	[PLACE_SAME] = "targets and requester on CPU 1",
	[PLACE_FREE] = "unpinned",
};

#define TARGET_CPU	1
#define REQUESTER_CPU	(placement == PLACE_SAME ? 1 : 0)

/* Pin the caller to cpu (-1: every CPU). */
static void
pin_self(int cpu)
{
	cpu_set_t set;
	long i, n = sysconf(_SC_NPROCESSORS_ONLN);

	if (placement == PLACE_FREE || n < 2)
		return;
	CPU_ZERO(&set);
	if (cpu >= 0)
		CPU_SET(cpu, &set);
	for (i = 0; cpu < 0 && i < n && i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Work that a spinner does between two checks of its flags: about a
 * microsecond, in a leaf that has a frame record of its own (GCC builds
 * none for a leaf that uses no stack, unless its address is taken). */
SC_NOIPA static void
spin_work(void)
{
	int i;

	__asm__ volatile("" : : "r"(__builtin_frame_address(0)));
	for (i = 0; i < 64; i++)
		__builtin_ia32_pause();
}

/* ------------------------------------------------------------------------
 * The raw target: a plain pthread at the bottom of a deep chain, spinning
 * while active, asleep on a futex otherwise
 * ------------------------------------------------------------------------ */

static pthread_t	raw_target;
static _Atomic pid_t	raw_target_tid;
static _Atomic uint32_t	raw_active;		/* futex word */
static atomic_int	raw_spinning;
static atomic_int	raw_stop;
static struct sc_range	raw_target_stack;

/* The handshake of the raw round trip. */
static atomic_int	raw_flag;
static _Atomic uint32_t	raw_futex;
static atomic_int	raw_waiting;

SC_NOIPA static void
raw_spin(void)
{
	while (!atomic_load_explicit(&raw_stop, memory_order_relaxed)) {
		if (!atomic_load_explicit(&raw_active, memory_order_relaxed)) {
			atomic_store(&raw_spinning, 0);
			(void)sc__futex_wait_raw(&raw_active, 0, 0);
			continue;
		}
		atomic_store_explicit(&raw_spinning, 1, memory_order_relaxed);
		spin_work();
	}
	SC_BARRIER();
}

SC_NOIPA static void
raw_chain(int n)
{
	if (n > 0)
		raw_chain(n - 1);
	else
		raw_spin();
	SC_BARRIER();
}

static void *
raw_target_main(void *arg)
{
	static char altstack[64 * 1024];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	sigset_t set;

	(void)arg;
	if (sigaltstack(&ss, NULL) != 0)
		die("sigaltstack", errno);
	raw_target_stack = own_stack();
	sigemptyset(&set);
	sigaddset(&set, RAW_SIGNO);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	atomic_store(&raw_target_tid, (pid_t)syscall(SYS_gettid));
	raw_chain(WALK_DEPTH);
	return (NULL);
}

static void
raw_target_start(void)
{
	sigset_t set;
	int error;

	/* Only the target takes the signal. */
	sigemptyset(&set);
	sigaddset(&set, RAW_SIGNO);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if ((error = pthread_create(&raw_target, NULL, raw_target_main,
	    NULL)) != 0)
		die("pthread_create", error);
	while (atomic_load(&raw_target_tid) == 0)
		usleep(1000);
}

static void
raw_target_activate(int on)
{
	atomic_store(&raw_active, (uint32_t)on);
	if (!on)
		return;
	sc__futex_wake_raw(&raw_active, 1);
	while (!atomic_load(&raw_spinning))
		sched_yield();
}

static void
raw_target_stop_join(void)
{
	atomic_store(&raw_stop, 1);
	atomic_store(&raw_active, 1);
	sc__futex_wake_raw(&raw_active, 1);
	pthread_join(raw_target, NULL);
}

/* ------------------------------------------------------------------------
 * 1. The raw round trip
 * ------------------------------------------------------------------------ */

static void
raw_handler_store(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	atomic_store_explicit(&raw_flag, 1, memory_order_release);
}

static void
raw_handler_wake(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;

	(void)sig;
	(void)si;
	(void)uc;
	atomic_store_explicit(&raw_flag, 1, memory_order_release);
	atomic_fetch_add(&raw_futex, 1);
	if (atomic_load(&raw_waiting))
		sc__futex_wake_raw(&raw_futex, 1);
	errno = saved_errno;
}

/* The sender's wait, shaped as the library's sc_stack_intr_wait(): the
 * clock is read at each turn (the bound), the futex once the spin ends. */
static void
raw_wait(int strategy)
{
	double start, now, spin_until, deadline;
	uint32_t seq;

	start = now_ns();
	deadline = start + RAW_BOUND_NS;
	spin_until = strategy == SC_WAIT_SPIN ? deadline :
	    strategy == SC_WAIT_SLEEP ? start : start + SPIN_NS;
	for (;;) {
		seq = atomic_load(&raw_futex);
		if (atomic_load_explicit(&raw_flag, memory_order_acquire))
			return;
		now = now_ns();
		if (now >= deadline)
			die("raw round trip", ETIMEDOUT);
		if (now < spin_until) {
			__builtin_ia32_pause();
			continue;
		}
		atomic_store(&raw_waiting, 1);
		if (!atomic_load_explicit(&raw_flag, memory_order_acquire))
			(void)sc__futex_wait_raw(&raw_futex, seq,
			    (long)(deadline - now));
		atomic_store(&raw_waiting, 0);
	}
}

/* pthread_kill() makes four system calls (it blocks every signal around
 * getpid() and tgkill()); tgkill() with a cached pid makes one. */
static void
raw_send(int use_tgkill)
{
	static pid_t pid;

	if (pid == 0)
		pid = getpid();
	if (use_tgkill)
		syscall(SYS_tgkill, pid, atomic_load(&raw_target_tid),
		    RAW_SIGNO);
	else
		pthread_kill(raw_target, RAW_SIGNO);
}

static double
raw_round_trip(int strategy, int use_tgkill)
{
	double t0;

	atomic_store(&raw_flag, 0);
	t0 = now_ns();
	raw_send(use_tgkill);
	raw_wait(strategy);
	return (now_ns() - t0);
}

/* ------------------------------------------------------------------------
 * 2. sc_stack_save_td() of a running thread
 * ------------------------------------------------------------------------ */

/* A machine of one CPU whose spinner runs while active, sleeps otherwise
 * (so that the CPU idles). */
struct capturer {
	struct sc_machine *m;
	struct sc_proc	*p;
	struct sc_thread *td;
	atomic_int	active, stop;
	int		bad;		/* not 0, or fewer than 4 frames */
};

SC_NOIPA static void
spin_loop(void *arg)
{
	struct capturer *c = arg;

	while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
		if (!atomic_load_explicit(&c->active, memory_order_relaxed)) {
			sc_sleep(c, "parked");
			continue;
		}
		spin_work();
		sc_maybe_yield();
	}
	SC_BARRIER();
}

SC_NOIPA static void
spin_mid(void *arg)
{
	spin_loop(arg);
	SC_BARRIER();
}

SC_NOIPA static void
spin_top(void *arg)
{
	spin_mid(arg);
	SC_BARRIER();
}

static void
capturer_start(struct capturer *c, int strategy, int signo,
    size_t trace_events)
{
	struct sc_machine_config cfg;
	int error;

	sc_machine_config_init(&cfg);
	cfg.ncpu = 1;
	cfg.wait_strategy = strategy;
	cfg.ipi_signo = signo;
	cfg.trace_events = trace_events;
	if ((error = sc_machine_create(&cfg, &c->m)) != 0)
		die("sc_machine_create", error);
	if ((error = sc_proc_create(c->m, "bench", &c->p)) != 0 ||
	    (error = sc_thread_create(c->p, "spinner", spin_top, c,
	    &c->td)) != 0)
		die("creating the spinner", error);
}

/* Make the spinner run (waking it until it does: a wakeup may come just
 * before its sleep), or let it fall asleep. */
static void
capturer_activate(struct capturer *c, int on)
{
	int n;

	atomic_store(&c->active, on);
	for (n = 0; on && sc_thread_state(c->td) != SC_TDS_RUNNING; n++) {
		if (n == 100000)
			die("the spinner does not run", ETIMEDOUT);
		sc_wakeup(c);
		usleep(100);
	}
}

static void
capturer_stop(struct capturer *c)
{
	atomic_store(&c->stop, 1);
	while (!sc_thread_exited(c->td)) {
		sc_wakeup(c);
		usleep(1000);
	}
	sc_thread_join(c->td);
	sc_machine_destroy(c->m);
}

static double
capture_one(struct capturer *c)
{
	struct sc_stack st;
	double t0;
	int error;

	t0 = now_ns();
	sc_proc_lock(c->p);
	sc_thread_lock(c->td);
	error = sc_stack_save_td(&st, c->td);
	sc_thread_unlock(c->td);
	sc_proc_unlock(c->p);
	t0 = now_ns() - t0;
	if (error != 0 || st.depth < 4)
		c->bad++;
	return (t0);
}

/* ------------------------------------------------------------------------
 * The nine series, interleaved
 * ------------------------------------------------------------------------ */

struct series {
	char		name[48];
	int		strategy;
	int		use_tgkill;	/* raw */
	struct capturer	*cap;		/* a capture series, or NULL */
	double		*v;
	struct dist	d;
};

static double
series_sample(struct series *s)
{
	if (s->cap != NULL)
		return (capture_one(s->cap));
	return (raw_round_trip(s->strategy, s->use_tgkill));
}

static void
series_activate(struct series *s, int on)
{
	if (s->cap != NULL)
		capturer_activate(s->cap, on);
	else {
		if (on)
			install(s->strategy == SC_WAIT_SPIN ?
			    raw_handler_store : raw_handler_wake);
		raw_target_activate(on);
	}
}

/* One block of s: BLOCK_WARMUP samples thrown away, then v[from..to). */
static void
series_block(struct series *s, int from, int to)
{
	int i;

	series_activate(s, 1);
	for (i = 0; i < BLOCK_WARMUP; i++)
		(void)series_sample(s);
	for (i = from; i < to; i++)
		s->v[i] = series_sample(s);
	series_activate(s, 0);
}

/* A block of each series in turn, until each has nsamples. */
static void
measure_series(struct series *s, int n)
{
	int filled, to, i;

	for (filled = 0; filled < nsamples; filled = to) {
		to = filled + BLOCK < nsamples ? filled + BLOCK : nsamples;
		for (i = 0; i < n; i++)
			series_block(&s[i], filled, to);
	}
	for (i = 0; i < n; i++)
		s[i].d = dist_of(s[i].v, nsamples);
}

/* ------------------------------------------------------------------------
 * 3. The walk inside the handler
 * ------------------------------------------------------------------------ */

enum { W_OURS, W_UNW, W_GLIBC, W_N };

static const char *const walker_names[W_N] = {
	"sc_stack_walk (from the interrupted %rbp)",
	"libunwind unw_backtrace()",
	"glibc backtrace()",
};

/* glibc's backtrace(), not the one libunwind.so interposes. */
static int	(*glibc_backtrace)(void **, int);

static void
find_glibc_backtrace(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);

	if (libc != NULL)
		*(void **)&glibc_backtrace = dlsym(libc, "backtrace");
	if (glibc_backtrace == NULL)
		die("dlsym(libc.so.6, backtrace)", ENOENT);
}

/* Written by the handler, read by the sender after the flag. */
static double	walk_ns[W_N];
static int	walk_depth[W_N];
static const struct sc_range *walk_text;
static size_t	walk_ntext;

static void
walk_handler(int sig, siginfo_t *si, void *ucv)
{
	int saved_errno = errno;
	ucontext_t *uc = ucv;
	uintptr_t rbp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
	void *ips[WALK_MAX];
	struct sc_stack st;
	double t0, t1, t2, t3;
	int r;

	(void)sig;
	(void)si;
	t0 = now_ns();
	for (r = 0; r < WALK_REPS; r++)
		walk_depth[W_OURS] = sc_stack_walk(&st, rbp, raw_target_stack,
		    walk_text, walk_ntext);
	t1 = now_ns();
	for (r = 0; r < WALK_REPS; r++)
		walk_depth[W_UNW] = unw_backtrace(ips, WALK_MAX);
	t2 = now_ns();
	for (r = 0; r < WALK_REPS; r++)
		walk_depth[W_GLIBC] = glibc_backtrace(ips, WALK_MAX);
	t3 = now_ns();
	walk_ns[W_OURS] = (t1 - t0) / WALK_REPS;
	walk_ns[W_UNW] = (t2 - t1) / WALK_REPS;
	walk_ns[W_GLIBC] = (t3 - t2) / WALK_REPS;
	/* The sender sleeps (on one CPU, a spinning one would hold it). */
	atomic_store_explicit(&raw_flag, 1, memory_order_release);
	atomic_fetch_add(&raw_futex, 1);
	if (atomic_load(&raw_waiting))
		sc__futex_wake_raw(&raw_futex, 1);
	errno = saved_errno;
}

static int
walk_signals(void)
{
	return (nsamples / 10 > 0 ? nsamples / 10 : 1);
}

static void
measure_walks(double *v, struct dist *d, int *depth)
{
	int nsig = walk_signals();
	void *ips[WALK_MAX];
	int i, w;

	/* backtrace() loads libgcc_s on first use: never in a handler. */
	find_glibc_backtrace();
	(void)glibc_backtrace(ips, WALK_MAX);
	(void)unw_backtrace(ips, WALK_MAX);
	sc_text_ranges(&walk_text, &walk_ntext);
	install(walk_handler);
	raw_target_activate(1);
	for (i = -10; i < nsig; i++) {
		(void)raw_round_trip(SC_WAIT_SLEEP, 0);
		for (w = 0; i >= 0 && w < W_N; w++)
			v[(size_t)w * (size_t)nsig + (size_t)i] = walk_ns[w];
	}
	raw_target_activate(0);
	for (w = 0; w < W_N; w++) {
		d[w] = dist_of(v + (size_t)w * (size_t)nsig, nsig);
		depth[w] = walk_depth[w];
	}
}

/* ------------------------------------------------------------------------
 * Report
 * ------------------------------------------------------------------------ */

static void
print_dist(const char *what, struct dist d)
{
	printf("  %-40s median %8.0f ns  p99 %8.0f ns  min %7.0f ns\n", what,
	    d.median, d.p99, d.min);
}

/* The best median and the best p99 of s[0..n). */
static struct dist
best_of(const struct series *s, int n)
{
	struct dist b = { 1e300, 1e300, 1e300 };
	int i;

	for (i = 0; i < n; i++) {
		b.median = s[i].d.median < b.median ? s[i].d.median : b.median;
		b.p99 = s[i].d.p99 < b.p99 ? s[i].d.p99 : b.p99;
		b.min = s[i].d.min < b.min ? s[i].d.min : b.min;
	}
	return (b);
}

/* raw[0..2 * nstrat): pthread_kill then tgkill; cap[0..nstrat). */
static const char *const how[2] = { "pthread_kill", "tgkill" };

static void
report_round_trips(const struct series *raw, const struct series *cap)
{
	struct dist braw = best_of(raw, 2 * nstrat);
	struct dist bcap = best_of(cap, nstrat);
	int i, k;

	printf("raw signal round trip, plain pthreads (the handler stores a "
	    "flag, + a futex wake when the sender may sleep):\n");
	for (i = 0; i < 2 * nstrat; i++)
		print_dist(raw[i].name, raw[i].d);
	printf("sc_stack_save_td() of a running thread (proc lock + thread "
	    "lock + capture + unlocks):\n");
	for (i = 0; i < nstrat; i++) {
		print_dist(cap[i].name, cap[i].d);
		if (cap[i].cap->bad != 0)
			printf("  %-40s %d captures failed or were short\n",
			    "", cap[i].cap->bad);
	}
	for (k = 0; k < 2; k++) {
		printf("ratio capture / raw %s, same wait:", how[k]);
		for (i = 0; i < nstrat; i++)
			printf(" %s median %.2fx p99 %.2fx%s",
			    short_name(strategies[i]), cap[i].d.median /
			    raw[k * nstrat + i].d.median, cap[i].d.p99 /
			    raw[k * nstrat + i].d.p99,
			    i < nstrat - 1 ? ";" : "\n");
	}
	printf("ratio best capture / best raw (any sender, any wait): median "
	    "%.2fx (target <= 1.10x), p99 %.2fx (target <= 1.5x)\n",
	    bcap.median / braw.median, bcap.p99 / braw.p99);
}

static void
report_walks(const struct dist *d, const int *depth)
{
	int w;

	printf("walk inside the signal handler (same stack, same handler; "
	    "median of %d signals, %d walks each):\n", walk_signals(),
	    WALK_REPS);
	for (w = 0; w < W_N; w++)
		printf("  %-42s depth %3d %7.0f ns/walk %6.1f ns/frame  "
		    "p99 %7.0f ns/walk\n", walker_names[w], depth[w],
		    d[w].median, d[w].median / (depth[w] > 0 ? depth[w] : 1),
		    d[w].p99);
	printf("  ratio per frame: unw_backtrace/sc_stack_walk %.1fx, "
	    "glibc backtrace/sc_stack_walk %.1fx\n",
	    (d[W_UNW].median / depth[W_UNW]) /
	    (d[W_OURS].median / depth[W_OURS]),
	    (d[W_GLIBC].median / depth[W_GLIBC]) /
	    (d[W_OURS].median / depth[W_OURS]));
}

static double
loadavg(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f != NULL) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return (l);
}

/* The cost of the protocol trace: the same capture, trace off and on. */
static void
report_trace(const struct series *cap, const struct series *traced)
{
	const struct series *off = NULL;
	int i;

	for (i = 0; i < nstrat; i++)
		if (cap[i].strategy == SC_WAIT_SPIN_SLEEP)
			off = &cap[i];
	if (off == NULL)
		return;
	printf("protocol trace (4096-event ring), %s:\n",
	    strategy_names[SC_WAIT_SPIN_SLEEP]);
	printf("  trace off: median %8.1f us  p99 %8.1f us\n",
	    off->d.median / 1000.0, off->d.p99 / 1000.0);
	printf("  trace on:  median %8.1f us  p99 %8.1f us\n",
	    traced->d.median / 1000.0, traced->d.p99 / 1000.0);
	printf("  ratio on/off: median %.2fx, p99 %.2fx (target <= 1.2x)\n",
	    traced->d.median / off->d.median, traced->d.p99 / off->d.p99);
}

/* ------------------------------------------------------------------------
 * main
 * ------------------------------------------------------------------------ */

#define NSERIES	(3 * nstrat + 1)

static struct series *
make_series(void)
{
	static struct capturer caps[MAXSTRAT];
	struct series *s;
	int i, k;

	static struct capturer traced;

	/* The capture series, then one more with the protocol trace on. */
	s = calloc(NSERIES, sizeof(*s));
	if (s == NULL)
		die("calloc", ENOMEM);
	for (k = 0; k < 2; k++)
		for (i = 0; i < nstrat; i++) {
			snprintf(s[k * nstrat + i].name, sizeof(s->name),
			    "raw %s, sender waits %s", how[k],
			    short_name(strategies[i]));
			s[k * nstrat + i].strategy = strategies[i];
			s[k * nstrat + i].use_tgkill = k;
		}
	for (i = 0; i < nstrat; i++) {
		snprintf(s[2 * nstrat + i].name, sizeof(s->name), "%s",
		    strategy_names[strategies[i]]);
		s[2 * nstrat + i].strategy = strategies[i];
		s[2 * nstrat + i].cap = &caps[i];
		/* SIGRTMIN + 2, 5, 6: one signal per machine, none RAW's. */
		capturer_start(&caps[i], strategies[i],
		    SIGRTMIN + (i == 0 ? 2 : 4 + i), 0);
	}
	snprintf(s[3 * nstrat].name, sizeof(s->name), "%s, trace on",
	    strategy_names[SC_WAIT_SPIN_SLEEP]);
	s[3 * nstrat].strategy = SC_WAIT_SPIN_SLEEP;
	s[3 * nstrat].cap = &traced;
	capturer_start(&traced, SC_WAIT_SPIN_SLEEP, SIGRTMIN + 8, 4096);
	for (i = 0; i < NSERIES; i++) {
		s[i].v = calloc((size_t)nsamples, sizeof(double));
		if (s[i].v == NULL)
			die("calloc", ENOMEM);
	}
	return (s);
}

static void
usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--same-cpu | --unpinned] "
	    "[samples >= 100]\n", prog);
	exit(2);
}

static void
parse_args(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--same-cpu") == 0) {
			placement = PLACE_SAME;
			strategies = all_strategies + 1;
			nstrat = MAXSTRAT - 1;
		} else if (strcmp(argv[i], "--unpinned") == 0)
			placement = PLACE_FREE;
		else if ((nsamples = (int)strtol(argv[i], NULL, 10)) < 100)
			usage(argv[0]);
	}
	if (placement != PLACE_FREE && sysconf(_SC_NPROCESSORS_ONLN) < 2)
		placement = PLACE_FREE;
}

int
main(int argc, char **argv)
{
	struct dist walks[W_N];
	struct series *s;
	int i, depth[W_N];

	parse_args(argc, argv);
	printf("bench_ipi: %d samples a series, in blocks of %d; %ld online "
	    "CPUs, %s; load average %.2f at start\n", nsamples, BLOCK,
	    sysconf(_SC_NPROCESSORS_ONLN), placement_names[placement],
	    loadavg());
	pin_self(TARGET_CPU);		/* inherited by the targets */
	raw_target_start();
	s = make_series();
	pin_self(REQUESTER_CPU);
	measure_series(s, NSERIES);
	measure_walks(s[0].v, walks, depth);
	pin_self(-1);
	raw_target_stop_join();
	for (i = 0; i < nstrat; i++)
		capturer_stop(s[2 * nstrat + i].cap);
	capturer_stop(s[3 * nstrat].cap);

	report_round_trips(s, s + 2 * nstrat);
	report_trace(s + 2 * nstrat, &s[3 * nstrat]);
	report_walks(walks, depth);
	printf("load average at end %.2f\n", loadavg());
	for (i = 0; i < NSERIES; i++)
		free(s[i].v);
	free(s);
	return (0);
}
