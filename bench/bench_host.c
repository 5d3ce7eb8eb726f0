/*
 * bench_host: sc_host_snapshot() of every thread of this process against
 * eu-stack -p (elfutils) on the same process, in the same run.
 *
 * The process: NTHREADS threads, SPIN of them spinning in a frame-pointer
 * chain and the others split between pthread_cond_wait() and nanosleep()
 * (1 s naps: a sleeper that wakes every millisecond would be a spinner),
 * and the caller.  Each thread, before it spins, waits or sleeps, walks
 * its own stack twice, with sc_stack_walk() (the library's oracle) and
 * with libunwind's unw_backtrace(); the snapshot's frames must agree with
 * both from the thread's first return address on.  Each round checks
 * every verdict (OK, the caller SELF), that every answer came from the
 * thread asked (sc_host_thread.name and the thread's own chain), and
 * every spinning thread's stack holds its own chain.
 *
 * usage: bench_host [NTHREADS [ROUNDS [SPIN [EURUNS]]]]
 *	(default 1000 5 10 3)
 *
 * eu-stack runs EURUNS times after the snapshots (it stops every thread
 * with ptrace, about 1 ms a thread); its time varies more from run to run
 * than the snapshot's (one run took 0.9 s, the next 1.2 s, on a quiet
 * machine), so the ratios compare best with best and median with median.
 * Without it (not installed, or ptrace refused) the ratio is not printed
 * and the reason is.  Nothing asserts a timing: exit status 1
 * only when a verdict or a frame is wrong.
 */
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "bench_util.h"
#include "stackcap/host.h"

enum { BH_SPIN, BH_COND, BH_SLEEP, BH_NKINDS };

static const char *const bh_names[BH_NKINDS] = { "bh-spin", "bh-cond",
    "bh-sleep" };

/* One thread: its kind, its tid, and its own walks of its stack, from
 * its first return address on. */
struct bh_thread {
	pthread_t	pt;
	int		kind;
	_Atomic pid_t	tid;		/* set once the walks are done */
	struct sc_stack	own_fp;		/* sc_stack_walk() */
	struct sc_stack	own_unw;	/* unw_backtrace() */
};

static _Atomic int bh_stop;
static pthread_mutex_t bh_mx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bh_cv = PTHREAD_COND_INITIALIZER;

/* The thread's own walks, called first thing by the innermost function
 * of its chain, whose frame is fp: from its return address on. */
static SC_NOIPA void
bh_walk_self(struct bh_thread *t, void *fp)
{
	const struct sc_range *text;
	size_t ntext;
	void *ips[SC_STACK_MAX];
	int n, i;

	sc_text_ranges(&text, &ntext);
	sc_stack_walk(&t->own_fp, (uintptr_t)fp, own_stack(), text, ntext);
	/* ips[0] is in this function, ips[1] in the caller: from ips[2]. */
	n = unw_backtrace(ips, SC_STACK_MAX);
	t->own_unw.depth = 0;
	for (i = 2; i < n; i++)
		t->own_unw.pcs[t->own_unw.depth++] = (uintptr_t)ips[i];
	atomic_store(&t->tid, (pid_t)syscall(SYS_gettid));
}

static SC_NOIPA void
bh_spin_inner(void *arg)
{
	bh_walk_self(arg, __builtin_frame_address(0));
	while (!atomic_load_explicit(&bh_stop, memory_order_relaxed))
		SC_BARRIER();
}
SC_CHAIN(bh_spin_mid, bh_spin_inner)
SC_CHAIN(bh_spin_outer, bh_spin_mid)

static SC_NOIPA void
bh_cond_inner(void *arg)
{
	bh_walk_self(arg, __builtin_frame_address(0));
	pthread_mutex_lock(&bh_mx);
	while (!atomic_load(&bh_stop))
		pthread_cond_wait(&bh_cv, &bh_mx);
	pthread_mutex_unlock(&bh_mx);
}
SC_CHAIN(bh_cond_mid, bh_cond_inner)
SC_CHAIN(bh_cond_outer, bh_cond_mid)

static SC_NOIPA void
bh_sleep_inner(void *arg)
{
	struct timespec ts = { 1, 0 };

	bh_walk_self(arg, __builtin_frame_address(0));
	while (!atomic_load(&bh_stop))
		nanosleep(&ts, NULL);	/* EINTR by a request: loop */
}
SC_CHAIN(bh_sleep_mid, bh_sleep_inner)
SC_CHAIN(bh_sleep_outer, bh_sleep_mid)

static void *
bh_main(void *arg)
{
	static void (*const fn[BH_NKINDS])(void *) = { bh_spin_outer,
	    bh_cond_outer, bh_sleep_outer };
	struct bh_thread *t = arg;

	pthread_setname_np(pthread_self(), bh_names[t->kind]);
	fn[t->kind](t);
	SC_BARRIER();
	return (NULL);
}

/* Do the snapshot's frames hold own's, in order, from where own's first
 * frame is?  At least 3 frames compared (the chain's). */
static bool
bh_agree(const struct sc_stack *snap, const struct sc_stack *own)
{
	int i, j;

	if (own->depth < 3)
		return (false);
	for (j = 0; j < snap->depth; j++)
		if (snap->pcs[j] == own->pcs[0])
			break;
	if (j == snap->depth)
		return (false);
	for (i = 0; i < own->depth && j + i < snap->depth; i++)
		if (snap->pcs[j + i] != own->pcs[i])
			return (false);
	return (i >= 3);
}

/* The kind whose chain pc is in (its "mid" frame), or -1; remembered by
 * pc, as sc_symbolize() reads the process's maps each time. */
static int
bh_kind_of(uintptr_t pc)
{
	static const char *const chain[BH_NKINDS] = { "bh_spin_mid",
	    "bh_cond_mid", "bh_sleep_mid" };
	static struct { uintptr_t pc; int kind; } cache[4096];
	size_t h = (size_t)(pc * 0x9e3779b97f4a7c15ull >> 52);
	char sym[64];
	int k;

	if (cache[h].pc == pc)
		return (cache[h].kind);
	cache[h].pc = pc;
	cache[h].kind = -1;
	if (sc_symbolize(pc, sym, sizeof(sym), NULL) == 0)
		for (k = 0; k < BH_NKINDS; k++)
			if (strcmp(sym, chain[k]) == 0)
				cache[h].kind = k;
	return (cache[h].kind);
}

/* Does st hold the kind's chain, symbolised, and no other kind's?  Its
 * own frames agreeing already proves the thread: this checks the names. */
static bool
bh_holds(const struct sc_stack *st, int kind)
{
	bool own = false;
	int i, k;

	for (i = 0; i < st->depth; i++) {
		if ((k = bh_kind_of(st->pcs[i])) < 0)
			continue;
		if (k != kind)
			return (false);
		own = true;
	}
	return (own);
}

struct bh_check {
	int	ok, self, other, wrong_thread, fp_agree, unw_agree;
	int	spin_own, spin;
};

static void
bh_check(const struct sc_host_thread *out, size_t n, struct bh_thread *t,
    int nt, struct bh_check *c)
{
	pid_t self = (pid_t)syscall(SYS_gettid);
	size_t i;
	int k;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < n; i++) {
		if (out[i].tid == self) {
			c->self += out[i].verdict == SC_HOST_SELF;
			c->other += out[i].verdict != SC_HOST_SELF;
			continue;
		}
		for (k = 0; k < nt; k++)
			if (atomic_load(&t[k].tid) == out[i].tid)
				break;
		if (k == nt || out[i].verdict != SC_HOST_OK) {
			c->other++;
			continue;
		}
		c->ok++;
		if (strcmp(out[i].name, bh_names[t[k].kind]) != 0 ||
		    !bh_holds(&out[i].stack, t[k].kind))
			c->wrong_thread++;
		c->fp_agree += bh_agree(&out[i].stack, &t[k].own_fp);
		c->unw_agree += bh_agree(&out[i].stack, &t[k].own_unw);
		if (t[k].kind == BH_SPIN) {
			c->spin++;
			c->spin_own += bh_holds(&out[i].stack, BH_SPIN);
		}
	}
}

/* A CPU clock (the process's or the calling thread's), in ns. */
static double
bh_cpu_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ((double)ts.tv_sec * 1e9 + (double)ts.tv_nsec);
}

/*
 * eu-stack -p on this process, its output counted (lines "TID n:"): the
 * wall time in ns, or a negative value with why set.
 */
static double
bh_eu_stack(int *nlisted, const char **why)
{
	extern char **environ;
	char pid[16], line[512];
	char prog[] = "eu-stack", opt[] = "-p";
	char *argv[] = { prog, opt, pid, NULL };
	posix_spawn_file_actions_t fa;
	int fds[2], status;
	double t0, t1;
	pid_t child;
	FILE *fp;

	*nlisted = 0;
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (pipe(fds) != 0) {
		*why = "pipe() failed";
		return (-1);
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_addclose(&fa, fds[0]);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	t0 = now_ns();
	if (posix_spawnp(&child, "eu-stack", &fa, NULL, argv, environ) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		close(fds[0]);
		close(fds[1]);
		*why = "eu-stack not found (Debian: elfutils)";
		return (-1);
	}
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	fp = fdopen(fds[0], "r");
	while (fp != NULL && fgets(line, sizeof(line), fp) != NULL)
		if (strncmp(line, "TID ", 4) == 0)
			(*nlisted)++;
	if (fp != NULL)
		fclose(fp);
	waitpid(child, &status, 0);
	t1 = now_ns();
	/* 1: it could not walk some thread (it says which on stderr), and
	 * printed the others. */
	if (!WIFEXITED(status) || WEXITSTATUS(status) > 1 || *nlisted == 0) {
		*why = "eu-stack failed (ptrace refused?)";
		return (-1);
	}
	return (t1 - t0);
}

int
main(int argc, char **argv)
{
	int nt = argc > 1 ? atoi(argv[1]) : 1000;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	int nspin = argc > 3 ? atoi(argv[3]) : 10;
	int neu = argc > 4 ? atoi(argv[4]) : 3;
	struct sc_host_thread *out;
	struct bh_thread *t;
	struct bh_check c;
	pthread_attr_t attr;
	double *ms, *eu, *pcpu, *qcpu;
	const char *why = NULL;
	size_t n, cap;
	int i, r, e, listed, bad = 0;

	if (nt < 3 || nt > 30000 || rounds < 1 || nspin < 0 || nspin > nt ||
	    neu < 1 || neu > 100) {
		fprintf(stderr, "usage: bench_host [NTHREADS (3..30000) "
		    "[ROUNDS [SPIN (0..NTHREADS) [EURUNS (1..100)]]]]\n");
		return (2);
	}
	cap = (size_t)nt + 64;
	t = calloc((size_t)nt, sizeof(*t));
	out = calloc(cap, sizeof(*out));
	ms = calloc((size_t)rounds, sizeof(*ms));
	eu = calloc((size_t)neu, sizeof(*eu));
	pcpu = calloc((size_t)rounds, sizeof(*pcpu));
	qcpu = calloc((size_t)rounds, sizeof(*qcpu));
	if (t == NULL || out == NULL || ms == NULL || eu == NULL ||
	    pcpu == NULL || qcpu == NULL)
		die("calloc", ENOMEM);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (i = 0; i < nt; i++) {
		t[i].kind = i < nspin ? BH_SPIN : i % 2 ? BH_COND : BH_SLEEP;
		if ((e = pthread_create(&t[i].pt, &attr, bh_main, &t[i])) != 0)
			die("pthread_create", e);
	}
	pthread_attr_destroy(&attr);
	for (i = 0; i < nt; i++)
		while (atomic_load(&t[i].tid) == 0)
			sched_yield();
	printf("bench_host: %d threads of this process (%d spinning in a "
	    "frame-pointer chain, %d in pthread_cond_wait(), %d in "
	    "nanosleep()) and the caller; %d rounds\n", nt, nspin,
	    (nt - nspin) / 2, nt - nspin - (nt - nspin) / 2, rounds);
	for (r = 0; r < rounds; r++) {
		double p0 = bh_cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
		double q0 = bh_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
		double t0 = now_ns();

		if ((e = sc_host_snapshot(out, cap, &n, 1000000000L)) != 0)
			die("sc_host_snapshot", e);
		ms[r] = (now_ns() - t0) / 1e6;
		pcpu[r] = (bh_cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - p0) / 1e6;
		qcpu[r] = (bh_cpu_ns(CLOCK_THREAD_CPUTIME_ID) - q0) / 1e6;
		bh_check(out, n, t, nt, &c);
		if (c.ok != nt || c.self != 1 || c.other != 0 ||
		    c.wrong_thread != 0 || c.fp_agree != nt ||
		    c.unw_agree != nt || c.spin_own != nspin)
			bad = 1;
	}
	qsort(ms, (size_t)rounds, sizeof(*ms), dbl_cmp);
	qsort(pcpu, (size_t)rounds, sizeof(*pcpu), dbl_cmp);
	qsort(qcpu, (size_t)rounds, sizeof(*qcpu), dbl_cmp);
	printf("sc_host_snapshot, the whole call  best %8.2f ms  median "
	    "%8.2f ms  (%.2f us a thread, best)\n", ms[0], ms[rounds / 2],
	    ms[0] * 1e3 / (nt + 1));
	/* With spinners, the process's CPU time is mostly theirs. */
	if (nspin == 0)
		printf("  CPU time a snapshot, median: the process %.2f ms, "
		    "the caller %.2f ms (the rest: the handlers and the "
		    "kernel's signal delivery on the threads)\n",
		    pcpu[rounds / 2], qcpu[rounds / 2]);
	printf("  last round: %d ok, %d self, %d other; %d answers not from "
	    "the thread asked; spinning threads with their own chain "
	    "%d/%d\n", c.ok, c.self, c.other, c.wrong_thread, c.spin_own,
	    nspin);
	printf("  frames agree with the thread's own sc_stack_walk() %d/%d, "
	    "with its own unw_backtrace() %d/%d\n", c.fp_agree, nt,
	    c.unw_agree, nt);
	for (r = 0; r < neu; r++)
		if ((eu[r] = bh_eu_stack(&listed, &why)) < 0)
			break;
	if (r < neu)
		printf("eu-stack -p: not measured: %s\n", why);
	else {
		qsort(eu, (size_t)neu, sizeof(*eu), dbl_cmp);
		printf("eu-stack -p, %d runs              best %8.2f ms  "
		    "median %8.2f ms  (%.2f us a thread, best; %d threads "
		    "listed)\n",
		    neu, eu[0] / 1e6, eu[neu / 2] / 1e6, eu[0] / 1e3 / listed,
		    listed);
		printf("ratio a thread: eu-stack / sc_host_snapshot, best "
		    "%.0fx, median %.0fx (goal >= 100x)\n",
		    (eu[0] / listed) / (ms[0] * 1e6 / (nt + 1)),
		    (eu[neu / 2] / listed) / (ms[rounds / 2] * 1e6 / (nt + 1)));
	}
	atomic_store(&bh_stop, 1);
	pthread_mutex_lock(&bh_mx);
	pthread_cond_broadcast(&bh_cv);
	pthread_mutex_unlock(&bh_mx);
	for (i = 0; i < nt; i++) {
		if (t[i].kind == BH_SLEEP)
			pthread_kill(t[i].pt, sc_host_signal());
		pthread_join(t[i].pt, NULL);
	}
	if (bad)
		printf("bench_host: a verdict, an answer or a frame was wrong "
		    "in some round\n");
	free(qcpu);
	free(pcpu);
	free(eu);
	free(ms);
	free(out);
	free(t);
	return (bad);
}
