/*
 * Deterministic simulation (cfg.seed, STACKCAP_SEED; src/sim_det.c): the
 * same seed gives the same run, event for event; other seeds give other
 * interleavings; the environment overrides the config; virtual time.
 *
 * The body is a 3-thread capture: two spinners in a call chain of their
 * own on two CPUs, and the test thread (a plain pthread) that captures
 * each in turn, then takes a snapshot of the machine.  A run's signature
 * folds in every trace event (its virtual time, CPU, thread, event and
 * arguments, but the one argument that is an address: IPI_RECEIVED's
 * rbp), every capture's result and every entry of the snapshot.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sc_test.h"

#define NSEEDS		100
#define NCAPTURES	4
#define NEVENTS		8192

/* What a spinner reads and counts: det_body's, or one run's of det2. */
struct det_flags {
	atomic_int	stop;
	atomic_int	started;
};

static struct det_flags det_fl;
static int det_pct;		/* cfg.sim_pct_depth of det_config() */

static SC_NOIPA void
det_spin_c(struct det_flags *f)
{
	atomic_fetch_add(&f->started, 1);
	while (!atomic_load(&f->stop))
		sc_maybe_yield();
	SC_BARRIER();
}

static SC_NOIPA void
det_spin_b(struct det_flags *f)
{
	det_spin_c(f);
	SC_BARRIER();
}

static SC_NOIPA void
det_spin(void *arg)
{
	det_spin_b(arg);
	SC_BARRIER();
}

static uint64_t
det_fold(uint64_t h, uint64_t v)
{
	return ((h ^ v) * 1099511628211ull);	/* FNV-1a, a word at a time */
}

struct det_run {
	uint64_t	sig;		/* the signature */
	uint64_t	steps;		/* counters' sim_steps */
	int		errors;		/* captures that did not return 0 */
	int		wrong;		/* captures without det_spin_c */
};

static struct sc_trace_record det_rec[NEVENTS];
static struct sc_kstack det_kk[8];
static const char *const det_chain[] = { "det_spin_c", "det_spin_b",
    "det_spin" };

/*
 * Fold m's trace into h: every event but the one argument that is an
 * address.  whole: a deterministic run, which must fit the ring (a real
 * one spins as it likes).
 */
static uint64_t
det_fold_trace_n(struct sc_machine *m, struct sc_trace_record *rec,
    uint64_t h, size_t *np)
{
	uint64_t a0;
	size_t n, j;

	*np = n = sc_trace_snapshot(m, rec, NEVENTS);
	for (j = 0; j < n; j++) {
		a0 = rec[j].event == SC_TRACE_IPI_RECEIVED ? 0 : rec[j].arg0;
		h = det_fold(h, rec[j].ts_ns);
		h = det_fold(h, (uint64_t)rec[j].cpu);
		h = det_fold(h, (uint64_t)rec[j].tid);
		h = det_fold(h, (uint64_t)rec[j].event);
		h = det_fold(h, a0);
		h = det_fold(h, rec[j].arg1);
	}
	return (h);
}

static uint64_t
det_fold_trace(struct sc_machine *m, uint64_t h, bool whole)
{
	size_t n;

	h = det_fold_trace_n(m, det_rec, h, &n);
	if (whole)
		assert_true(n < NEVENTS);
	return (h);
}

/* One run of the body on a machine of this config. */
static void
det_body(const struct sc_machine_config *cfg, struct det_run *r)
{
	struct sc_machine *m;
	struct sc_proc *p;
	struct sc_thread *td[2];
	struct sc_stack st;
	struct sc_counters c;
	uint64_t h = 1469598103934665603ull;
	size_t n, j, k;
	int i, error;

	memset(r, 0, sizeof(*r));
	atomic_store(&det_fl.stop, 0);
	atomic_store(&det_fl.started, 0);
	assert_int_equal(sc_machine_create(cfg, &m), 0);
	assert_int_equal(sc_proc_create(m, "det", &p), 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(sc_thread_create(p, "spin", det_spin, &det_fl,
		    &td[i]), 0);
	/* A thread that never ran has an empty stack (and 0): wait until
	 * both are in their chains.  The wait is a scheduling point. */
	SC_WAIT_FOR(atomic_load(&det_fl.started) == 2);
	for (k = 0; k < NCAPTURES; k++) {
		for (i = 0; i < 2; i++) {
			error = sc_stack_save_td_locked(p, td[i], &st);
			h = det_fold(h, (uint64_t)error);
			h = det_fold(h, st.depth);
			if (error != 0)
				r->errors++;
			else if (!sc_test_stack_has_chain(&st, det_chain, 3))
				r->wrong++;
		}
	}
	/* And one snapshot: both CPUs' slots in one round. */
	assert_int_equal(sc_machine_snapshot(m, det_kk, 8, &n), 0);
	assert_int_equal(n, 4);
	for (j = 0; j < n; j++) {
		h = det_fold(h, (uint64_t)det_kk[j].tid);
		h = det_fold(h, (uint64_t)det_kk[j].state);
		h = det_fold(h, det_kk[j].stack.depth);
		if (j < 2)
			continue;	/* the idle threads */
		if (det_kk[j].state != SC_KKST_STATE_STACKOK)
			r->errors++;
		else if (!sc_test_stack_has_chain(&det_kk[j].stack,
		    det_chain, 3))
			r->wrong++;
	}
	atomic_store(&det_fl.stop, 1);
	for (i = 0; i < 2; i++)
		assert_int_equal(sc_thread_join(td[i]), 0);
	sc_machine_counters(m, &c);
	r->steps = c.sim_steps;
	r->sig = det_fold_trace(m, h, r->steps > 0);
	sc_machine_destroy(m);
}

static void
det_config(struct sc_machine_config *cfg, uint64_t seed)
{
	sc_machine_config_init(cfg);
	cfg->ncpu = 2;
	cfg->seed = seed;
	cfg->sim_pct_depth = det_pct;
	cfg->trace_events = NEVENTS;
}

static int
det_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x < y ? -1 : x > y);
}

/* One seed, run twice: 0 when both runs agree and every capture is right. */
static int
det_twice(uint64_t seed, void *arg)
{
	struct sc_machine_config cfg;
	struct det_run a, b;
	uint64_t *sigs = arg;

	det_config(&cfg, seed);
	det_body(&cfg, &a);
	det_body(&cfg, &b);
	if (a.sig != b.sig || a.steps != b.steps || a.steps == 0) {
		print_error("two runs differ: %016" PRIx64 " in %" PRIu64
		    " steps, %016" PRIx64 " in %" PRIu64 "\n", a.sig,
		    a.steps, b.sig, b.steps);
		return (1);
	}
	if (a.errors != 0 || a.wrong != 0) {
		print_error("%d captures failed, %d without the chain\n",
		    a.errors, a.wrong);
		return (1);
	}
	sigs[(seed - 1) % NSEEDS] = a.sig;
	return (0);
}

/*
 * 100 seeds, each run twice: the same signature (every event at the same
 * virtual time, the same capture results); every capture right; the seeds
 * between them give many interleavings, not one.
 */
static void
test_same_seed_same_run(void **state)
{
	uint64_t sigs[NSEEDS];
	int distinct, i;

	(void)state;
	if (sc_test_seeds(det_twice, sigs, NSEEDS) < NSEEDS)
		return;			/* a replay of one seed */
	qsort(sigs, NSEEDS, sizeof(sigs[0]), det_cmp);
	for (distinct = 1, i = 1; i < NSEEDS; i++)
		if (sigs[i] != sigs[i - 1])
			distinct++;
	print_message("%d distinct runs of %d seeds\n", distinct, NSEEDS);
	assert_true(distinct >= NSEEDS / 2);
}

/* PCT (depth 3): the same seed, the same run; seeds still differ. */
static void
test_pct_same_run(void **state)
{
	uint64_t sigs[NSEEDS];
	int distinct, i;

	(void)state;
	det_pct = 3;
	if (sc_test_seeds(det_twice, sigs, NSEEDS / 4) < NSEEDS / 4) {
		det_pct = 0;
		return;
	}
	det_pct = 0;
	qsort(sigs, NSEEDS / 4, sizeof(sigs[0]), det_cmp);
	for (distinct = 1, i = 1; i < NSEEDS / 4; i++)
		if (sigs[i] != sigs[i - 1])
			distinct++;
	print_message("PCT: %d distinct runs of %d seeds\n", distinct,
	    NSEEDS / 4);
	assert_true(distinct >= NSEEDS / 8);
}

/*
 * Two sleepers on two wait channels, each woken again and again.  Where
 * the channels are does not change the run: sleep-queue chains were
 * hashed by address, so two channels that shared a chain contended on its
 * lock (spin points) where two others did not, and the same seed gave
 * another run (seen: test_explore's replays failing under ASan, whose
 * heap addresses move from run to run).
 */
#define DET_SLEEPS	30

struct det_sleeper {
	const char	*w;		/* its wait channel */
	atomic_int	slept;		/* 1: done */
};

static void
det_sleeper(void *arg)
{
	struct det_sleeper *d = arg;
	int i;

	for (i = 0; i < DET_SLEEPS; i++)
		sc_sleep(d->w, "detchan");
	atomic_store(&d->slept, 1);
}

static uint64_t
det_channels_run(uint64_t seed, const char *w0, const char *w1)
{
	static struct det_sleeper d[2];
	struct sc_machine_config cfg;
	struct sc_machine *m;
	struct sc_proc *p;
	struct sc_thread *td[2];
	uint64_t h = 1469598103934665603ull;
	long n;
	int k;

	det_config(&cfg, seed);
	assert_int_equal(sc_machine_create(&cfg, &m), 0);
	assert_int_equal(sc_proc_create(m, "chan", &p), 0);
	d[0].w = w0;
	d[1].w = w1;
	for (k = 0; k < 2; k++) {
		atomic_store(&d[k].slept, 0);
		assert_int_equal(sc_thread_create(p, "sleeper", det_sleeper,
		    &d[k], &td[k]), 0);
	}
	for (n = 0; !(atomic_load(&d[0].slept) && atomic_load(&d[1].slept)) &&
	    n < 1000000; n++) {
		sc_wakeup(w0);
		sc_wakeup(w1);
		sc_maybe_yield();
	}
	assert_true(atomic_load(&d[0].slept) && atomic_load(&d[1].slept));
	for (k = 0; k < 2; k++)
		assert_int_equal(sc_thread_join(td[k]), 0);
	h = det_fold_trace(m, h, true);
	sc_machine_destroy(m);
	return (h);
}

/* The chain of a channel as subr_sleepqueue.c hashed it (SC_SLEEPQ_HASH). */
static unsigned
det_chain_of(const void *w)
{
	return ((((uintptr_t)w >> 4) ^ ((uintptr_t)w >> 10)) % 64);
}

static void
test_channels_do_not_matter(void **state)
{
	static char buf[8192];
	const char *w0 = buf, *same = NULL, *other = NULL;
	uint64_t seed;
	size_t i;

	(void)state;
	for (i = 16; i < sizeof(buf) && (same == NULL || other == NULL);
	    i += 16) {
		if (det_chain_of(buf + i) == det_chain_of(w0))
			same = same != NULL ? same : buf + i;
		else
			other = other != NULL ? other : buf + i;
	}
	assert_non_null(same);
	assert_non_null(other);
	for (seed = 1; seed <= 20; seed++)
		assert_true(det_channels_run(seed, w0, same) ==
		    det_channels_run(seed, w0, other));
}

/*
 * The take-back (src/sim_det_clock.c): two threads that spin on a flag
 * without calling the library, on two CPUs, which the test thread
 * captures, then releases.  Each keeps the run token until it is taken
 * back from it; an IPI is taken at that point, and the capture holds the
 * spin's chain.  Where the spins are interrupted in real time varies
 * from run to run, not where in the run the points fall.  Each take-back
 * costs 2 ms of CPU time: 3 seeds.
 */
#define TB_SEEDS	3
#define TB_CAPTURES	2

static atomic_int tb_stop, tb_started;
static bool tb_spinwait;	/* the spin calls sc_cpu_spinwait() */

/* The spin.  The walk begins at the interrupted %rbp, as in real mode:
 * its caller's caller is the first frame sure to be seen (a leaf may
 * have no frame of its own). */
static SC_NOIPA void
tb_spin_d(void)
{
	while (!atomic_load(&tb_stop))
		if (tb_spinwait)
			sc_cpu_spinwait();
	SC_BARRIER();
}

static SC_NOIPA void
tb_spin_c(void)
{
	atomic_fetch_add(&tb_started, 1);
	tb_spin_d();
	SC_BARRIER();
}

static SC_NOIPA void
tb_spin_b(void)
{
	tb_spin_c();
	SC_BARRIER();
}

static SC_NOIPA void
tb_spin(void *arg)
{
	(void)arg;
	tb_spin_b();
	SC_BARRIER();
}

static const char *const tb_chain[] = { "tb_spin_b", "tb_spin" };
#if defined(SC_SANITIZER_THREAD)
/* TSan runs the handler late, with a context that is no longer the
 * spin's (sc_ipi_frame(), src/ipi_sim.c): the walk begins elsewhere. */
#define TB_CHAIN	false
#else
#define TB_CHAIN	true
#endif

static void
tb_body(uint64_t seed, struct det_run *r, uint64_t *takebacks)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	struct sc_proc *p;
	struct sc_thread *td[2];
	struct sc_stack st;
	struct sc_counters c;
	uint64_t h = 1469598103934665603ull;
	int i, k, error;

	memset(r, 0, sizeof(*r));
	atomic_store(&tb_stop, 0);
	atomic_store(&tb_started, 0);
	det_config(&cfg, seed);
	assert_int_equal(sc_machine_create(&cfg, &m), 0);
	assert_int_equal(sc_proc_create(m, "tb", &p), 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(sc_thread_create(p, "spin", tb_spin, NULL,
		    &td[i]), 0);
	SC_WAIT_FOR(atomic_load(&tb_started) == 2);
	for (k = 0; k < TB_CAPTURES; k++) {
		for (i = 0; i < 2; i++) {
			error = sc_stack_save_td_locked(p, td[i], &st);
			h = det_fold(h, (uint64_t)error);
			h = det_fold(h, st.depth);
			if (error != 0)
				r->errors++;
			else if (TB_CHAIN &&
			    !sc_test_stack_has_chain(&st, tb_chain, 2))
				r->wrong++;
		}
	}
	atomic_store(&tb_stop, 1);
	for (i = 0; i < 2; i++)
		assert_int_equal(sc_thread_join(td[i]), 0);
	sc_machine_counters(m, &c);
	r->steps = c.sim_steps;
	*takebacks = c.sim_takebacks;
	h = det_fold(h, c.sim_takebacks);
	h = det_fold(h, c.sim_ticks);
	r->sig = det_fold_trace(m, h, true);
	sc_machine_destroy(m);
}

/*
 * Run body twice with seed: the same signature, steps and count (what
 * names it), or an error said and 1.  *a and *count: the first run's.
 */
static int
det_same_twice(void (*body)(uint64_t, struct det_run *, uint64_t *),
    uint64_t seed, const char *what, struct det_run *a, uint64_t *count)
{
	struct det_run b;
	uint64_t count2;

	body(seed, a, count);
	body(seed, &b, &count2);
	if (a->sig != b.sig || a->steps != b.steps || *count != count2) {
		print_error("two runs differ: %016" PRIx64 " in %" PRIu64
		    " steps, %ju %s; %016" PRIx64 " in %" PRIu64 ", %ju\n",
		    a->sig, a->steps, (uintmax_t)*count, what, b.sig, b.steps,
		    (uintmax_t)count2);
		return (1);
	}
	return (0);
}

static int
tb_twice(uint64_t seed, void *arg)
{
	struct det_run a;
	uint64_t ta;

	(void)arg;
	if (det_same_twice(tb_body, seed, "take-backs", &a, &ta) != 0)
		return (1);
	/* Take-backs exactly when the spin makes no point of its own. */
	if ((ta != 0) == tb_spinwait || a.errors != 0 || a.wrong != 0) {
		print_error("%ju take-backs, %d captures failed, %d without "
		    "the chain\n", (uintmax_t)ta, a.errors, a.wrong);
		return (1);
	}
	return (0);
}

static void
test_takeback_same_run(void **state)
{
	(void)state;
	tb_spinwait = false;
	(void)sc_test_seeds(tb_twice, NULL, TB_SEEDS);
}

/*
 * The same spins, each turn an sc_cpu_spinwait(): a point where the
 * spinner waits, so the run needs no take-back at all (tb_twice() checks
 * that there were none), and stays the seed's, each capture with the
 * spin's chain.
 */
static void
test_spinwait_needs_no_takeback(void **state)
{
	(void)state;
	tb_spinwait = true;
	(void)sc_test_seeds(tb_twice, NULL, TB_SEEDS);
	tb_spinwait = false;
}

/* The tids of this process's threads now, into tids[0..max): how many. */
static size_t
task_tids(pid_t *tids, size_t max)
{
	struct dirent *e;
	size_t n = 0;
	DIR *d;

	assert_non_null(d = opendir("/proc/self/task"));
	while ((e = readdir(d)) != NULL && n < max)
		if (e->d_name[0] != '.')
			tids[n++] = (pid_t)atoi(e->d_name);
	closedir(d);
	return (n);
}

/*
 * The voluntary context switches of the threads of this process that are
 * not in old[0..nold), but the deterministic watchdog ("sc-ds-watchdog"),
 * summed from /proc/self/task/TID/status.
 */
static long
new_threads_switches(const pid_t *old, size_t nold)
{
	char path[64], comm[32], line[128];
	pid_t tids[256];
	size_t i, j, n;
	long sum = 0, v;
	FILE *fp;

	n = task_tids(tids, 256);
	for (i = 0; i < n; i++) {
		for (j = 0; j < nold && old[j] != tids[i]; j++)
			;
		if (j < nold)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/comm",
		    (int)tids[i]);
		if ((fp = fopen(path, "r")) == NULL)
			continue;
		comm[0] = '\0';
		(void)fgets(comm, sizeof(comm), fp);
		fclose(fp);
		if (strncmp(comm, "sc-ds-watchdog", 14) == 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/status",
		    (int)tids[i]);
		if ((fp = fopen(path, "r")) == NULL)
			continue;
		while (fgets(line, sizeof(line), fp) != NULL)
			if (sscanf(line, "voluntary_ctxt_switches: %ld",
			    &v) == 1)
				sum += v;
		fclose(fp);
	}
	return (sum);
}

/*
 * The actors that wait for the token sleep: while the creator holds it
 * outside the library for 50 ms, the machine's CPU pthreads (the threads
 * that its create added, but the watchdog), which wait for it, are not
 * woken (a pthread is switched out once a wake, so their voluntary
 * switches count their wakes).  Before, each woke every 500 us to look
 * at the holder, about a hundred times each in those 50 ms, and armed a
 * timer at every handoff; the watchdog looks now.
 */
static void
test_waiters_sleep(void **state)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	pid_t old[256];
	size_t nold;
	long before, woken;

	(void)state;
	nold = task_tids(old, 256);
	sc_machine_config_init(&cfg);
	cfg.ncpu = 2;
	cfg.seed = 7;
	assert_int_equal(sc_machine_create(&cfg, &m), 0);
	before = new_threads_switches(old, nold);
	(void)nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 },
	    NULL);
	woken = new_threads_switches(old, nold) - before;
	sc_machine_destroy(m);
	if (woken > 10)
		fail_msg("the waiting CPU pthreads were woken %ld times in "
		    "50 ms (none is expected)", woken);
}

/*
 * The virtual clock preempts: one CPU, two threads that spin without a
 * call.  The second runs only if a virtual tick's sched_clock() ends the
 * first one's slice and the take-back's interrupt end switches it out
 * (sc__timerint), so the run is the seed's, preemptions included.
 */
static void
tp_body(uint64_t seed, struct det_run *r, uint64_t *preempted)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	struct sc_proc *p;
	struct sc_thread *td[2];
	struct sc_counters c;
	int i;

	memset(r, 0, sizeof(*r));
	atomic_store(&tb_stop, 0);
	atomic_store(&tb_started, 0);
	det_config(&cfg, seed);
	cfg.ncpu = 1;
	assert_int_equal(sc_machine_create(&cfg, &m), 0);
	assert_int_equal(sc_proc_create(m, "tp", &p), 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(sc_thread_create(p, "spin", tb_spin, NULL,
		    &td[i]), 0);
	SC_WAIT_FOR(atomic_load(&tb_started) == 2);
	atomic_store(&tb_stop, 1);
	for (i = 0; i < 2; i++)
		assert_int_equal(sc_thread_join(td[i]), 0);
	sc_machine_counters(m, &c);
	r->steps = c.sim_steps;
	*preempted = c.preempted;
	r->sig = det_fold_trace(m, det_fold(c.preempted, c.sim_ticks), true);
	sc_machine_destroy(m);
}

static int
tp_twice(uint64_t seed, void *arg)
{
	struct det_run a;
	uint64_t pa;

	(void)arg;
	if (det_same_twice(tp_body, seed, "preempted", &a, &pa) != 0)
		return (1);
	if (pa == 0) {
		print_error("the second spinner ran, yet none was "
		    "preempted\n");
		return (1);
	}
	return (0);
}

static void
test_tick_preempts_same_run(void **state)
{
	(void)state;
#if defined(SC_SANITIZER_THREAD)
	/* TSan runs the handler late, with a context that is no longer the
	 * spin's: the interrupt's end never redirects there (kern_clock.c),
	 * so a spinner is never preempted at a tick under TSan. */
	skip();
#endif
	(void)sc_test_seeds(tp_twice, NULL, TB_SEEDS);
}

/* STACKCAP_SEED replaces cfg.seed; seed 0 (no variable) is real. */
static void
test_env_seed(void **state)
{
	struct sc_machine_config cfg;
	struct det_run a, b, real;

	(void)state;
	unsetenv("STACKCAP_SEED");	/* a replay's seed ends here */
	det_config(&cfg, 0);
	det_body(&cfg, &real);
	assert_int_equal(real.steps, 0);	/* real concurrency */
	setenv("STACKCAP_SEED", "0x2a", 1);
	det_body(&cfg, &a);
	det_config(&cfg, 42);
	unsetenv("STACKCAP_SEED");
	det_body(&cfg, &b);
	assert_true(a.steps > 0);
	assert_true(a.sig == b.sig);		/* 0x2a is seed 42 */
}

/* The steps that creating a machine of cfg.seed 0 (real concurrency)
 * takes with STACKCAP_SEED=v: 0 when v is ignored. */
static uint64_t
det_env_steps(const char *v)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	struct sc_counters c;

	setenv("STACKCAP_SEED", v, 1);
	sc_machine_config_init(&cfg);
	cfg.ncpu = 1;
	assert_int_equal(sc_machine_create(&cfg, &m), 0);
	unsetenv("STACKCAP_SEED");
	sc_machine_counters(m, &c);
	sc_machine_destroy(m);
	return (c.sim_steps);
}

/*
 * Only a plain decimal or a 0x number is a seed (docs/determinism.md).
 * "-1", "+7", " 7", "7x", an overflow... were taken by strtoull() ("-1"
 * as seed 2^64 - 1, "010" as octal 8); now they are said once, on
 * stderr, and ignored.
 */
static void
test_env_seed_not_a_seed(void **state)
{
	static const char *bad[] = { "-1", "-5", " 7", "+7", "7 ", "7x",
	    "0x", "0xg", "forty-two", "99999999999999999999999",
	    "18446744073709551616", "0x10000000000000000", "1e3" };
	struct sc_machine_config cfg;
	struct sc_machine *m;
	struct det_run a, b;
	char said[512];
	FILE *f;
	size_t i, len;
	int fd;

	(void)state;
	/* The first value that is not a seed is said, on stderr. */
	f = tmpfile();
	assert_non_null(f);
	fflush(stderr);
	fd = dup(STDERR_FILENO);
	assert_true(fd >= 0);
	assert_true(dup2(fileno(f), STDERR_FILENO) >= 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (det_env_steps(bad[i]) != 0)
			break;
	fflush(stderr);
	assert_true(dup2(fd, STDERR_FILENO) >= 0);
	close(fd);
	if (i < sizeof(bad) / sizeof(bad[0]))
		fail_msg("STACKCAP_SEED=\"%s\" was taken as a seed", bad[i]);
	rewind(f);
	len = fread(said, 1, sizeof(said) - 1, f);
	said[len] = '\0';
	fclose(f);
	assert_non_null(strstr(said, "STACKCAP_SEED=-1 is not a seed"));
	/* Once: the other values said nothing more. */
	assert_null(strstr(said, "-5"));
	/* Ignored means that cfg.seed stays (not 2^64 - 1's run). */
	det_config(&cfg, 42);
	det_body(&cfg, &b);
	setenv("STACKCAP_SEED", "-1", 1);
	det_body(&cfg, &a);
	unsetenv("STACKCAP_SEED");
	assert_true(a.sig == b.sig);
	/* The library never sets errno: not even strtoull()'s ERANGE. */
	setenv("STACKCAP_SEED", "99999999999999999999999", 1);
	errno = EDOM;
	assert_int_equal(sc_machine_create(&cfg, &m), 0);
	assert_int_equal(errno, EDOM);
	sc_machine_destroy(m);
	unsetenv("STACKCAP_SEED");
	/* Plain decimal (leading zeros too) and 0x numbers are seeds. */
	assert_true(det_env_steps("7") > 0);
	assert_true(det_env_steps("010") > 0);
	assert_true(det_env_steps("0x2A") > 0);
	assert_true(det_env_steps("18446744073709551615") > 0);
	assert_int_equal(det_env_steps("0"), 0);	/* real concurrency */
	assert_int_equal(det_env_steps(""), 0);		/* unset */
}

static int
det_count_seed(uint64_t seed, void *arg)
{
	uint64_t *seen = arg;	/* [0] the runs, [1] the first seed */

	if (seen[0]++ == 0)
		seen[1] = seed;
	return (seen[0] > 10);	/* seeds that wrapped past 2^64 - 1 */
}

/*
 * sc_test_seeds() reads STACKCAP_SEED as the library does: a seed it
 * ignores runs the seeds 1..n, and the last seed, 2^64 - 1, runs alone.
 * The helper parsed with strtoull(): "-1" became 2^64 - 1, and the loop
 * from there wrapped to 0, 1, 2... without an end.
 */
static void
test_env_seed_helper(void **state)
{
	uint64_t seen[2];

	(void)state;
	setenv("STACKCAP_SEED", "-1", 1);
	memset(seen, 0, sizeof(seen));
	assert_int_equal(sc_test_seeds(det_count_seed, seen, 3), 3);
	assert_true(seen[1] == 1);
	setenv("STACKCAP_SEED", "18446744073709551615", 1);
	memset(seen, 0, sizeof(seen));
	assert_int_equal(sc_test_seeds(det_count_seed, seen, 3), 1);
	assert_true(seen[1] == UINT64_MAX);
	setenv("STACKCAP_SEED", "010", 1);
	memset(seen, 0, sizeof(seen));
	assert_int_equal(sc_test_seeds(det_count_seed, seen, 3), 1);
	assert_true(seen[1] == 10);
	unsetenv("STACKCAP_SEED");
}

/*
 * A plain pthread stays an actor of a machine that another pthread
 * destroyed (while it was outside the library, as the contract asks).
 * The first version kept its pointer to the freed state: ASan saw a use
 * after free at its next spin lock, and a next machine given the same
 * memory took it for an actor it already had, in another's slot.
 */
static struct sc_machine *det_stale_m;
static atomic_int det_stale_phase;

static void *
det_stale_main(void *arg)
{
	struct sc_machine_config cfg;
	struct sc_proc *p;

	(void)arg;
	det_config(&cfg, 5);
	if (sc_machine_create(&cfg, &det_stale_m) != 0)
		return (NULL);
	atomic_store(&det_stale_phase, 1);	/* the test destroys it */
	while (atomic_load(&det_stale_phase) != 2)
		sched_yield();
	/* The second machine, the test's: this pthread calls in late. */
	(void)sc_proc_create(det_stale_m, "late", &p);
	atomic_store(&det_stale_phase, 3);
	return (NULL);		/* its exit hands the token on */
}

static void
test_stale_actor(void **state)
{
	struct sc_machine_config cfg;
	struct sc_counters c;
	pthread_t t;

	(void)state;
	if (getenv("STACKCAP_SEED") != NULL)
		skip();
	atomic_store(&det_stale_phase, 0);
	assert_int_equal(pthread_create(&t, NULL, det_stale_main, NULL), 0);
	SC_WAIT_FOR(atomic_load(&det_stale_phase) == 1);
	sc_machine_destroy(det_stale_m);
	det_config(&cfg, 6);
	assert_int_equal(sc_machine_create(&cfg, &det_stale_m), 0);
	atomic_store(&det_stale_phase, 2);
	SC_WAIT_FOR(atomic_load(&det_stale_phase) == 3);
	assert_int_equal(pthread_join(t, NULL), 0);
	sc_machine_counters(det_stale_m, &c);
	assert_int_equal(c.sim_late, 1);	/* a new actor, its own slot */
	sc_machine_destroy(det_stale_m);
}

static int
det_ncores(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return (0);
	return (CPU_COUNT(&set));
}

static void
det_nothing(void *arg)
{
	(void)arg;
}

/* The machine still runs: a thread made, run and joined. */
static void
det_after_exit(struct sc_machine *m)
{
	struct sc_proc *p;
	struct sc_thread *td;

	assert_int_equal(sc_proc_create(m, "after", &p), 0);
	assert_int_equal(sc_thread_create(p, "nothing", det_nothing, NULL,
	    &td), 0);
	assert_int_equal(sc_thread_join(td), 0);
}

static int det_pin_n;

/* A late caller: pinned with the others; exits holding the token. */
static void *
det_pin_late(void *arg)
{
	struct sc_proc *p;

	(void)arg;
	(void)sc_proc_create(det_stale_m, "late", &p);
	det_pin_n = det_ncores();
	atomic_store(&det_stale_phase, 1);
	return (NULL);
}

/* The creator of a machine that the test thread destroys. */
static void *
det_pin_creator(void *arg)
{
	struct sc_machine_config cfg;

	(void)arg;
	det_config(&cfg, 10);
	if (sc_machine_create(&cfg, &det_stale_m) != 0)
		return (NULL);
	det_pin_n = det_ncores();
	atomic_store(&det_stale_phase, 1);
	while (atomic_load(&det_stale_phase) != 2)
		sched_yield();		/* outside the library */
	det_pin_n = det_ncores();	/* destroy gave it back */
	return (NULL);
}

/*
 * Every actor runs on one host core while the machine is deterministic,
 * and gets its affinity back: the creator at destroy, a late pthread that
 * exits at its exit (which hands the token on: that used to stop the
 * machine), the creator also when another pthread destroys the machine.
 * STACKCAP_SIM_PIN=0 pins nothing.
 */
static void
test_pin(void **state)
{
	struct sc_machine_config cfg;
	pthread_t t;
	int n0;

	(void)state;
	if (getenv("STACKCAP_SEED") != NULL)
		skip();
	n0 = det_ncores();
	det_config(&cfg, 9);
	assert_int_equal(sc_machine_create(&cfg, &det_stale_m), 0);
	assert_int_equal(det_ncores(), 1);
	atomic_store(&det_stale_phase, 0);
	assert_int_equal(pthread_create(&t, NULL, det_pin_late, NULL), 0);
	SC_WAIT_FOR(atomic_load(&det_stale_phase) == 1);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(det_pin_n, 1);
	det_after_exit(det_stale_m);
	sc_machine_destroy(det_stale_m);
	assert_int_equal(det_ncores(), n0);

	atomic_store(&det_stale_phase, 0);
	assert_int_equal(pthread_create(&t, NULL, det_pin_creator, NULL), 0);
	SC_WAIT_FOR(atomic_load(&det_stale_phase) == 1);
	assert_int_equal(det_pin_n, 1);
	sc_machine_destroy(det_stale_m);
	atomic_store(&det_stale_phase, 2);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(det_pin_n, n0);

	setenv("STACKCAP_SIM_PIN", "0", 1);
	assert_int_equal(sc_machine_create(&cfg, &det_stale_m), 0);
	assert_int_equal(det_ncores(), n0);
	sc_machine_destroy(det_stale_m);
	unsetenv("STACKCAP_SIM_PIN");
}

/*
 * Two deterministic machines, driven by one plain pthread in turns or by
 * two pthreads at once.  A run (struct det2) is driven in steps, each a
 * few calls into its machine; whatever the other machine does between two
 * steps, a machine's run is its seed's, event for event.  Before the fix
 * a pthread was an actor of one machine at a time: its first call into
 * the second left the first for good while it held that one's run token,
 * and the first machine stopped ("actor N has waited 10 s").  Its
 * sleepers shared one sleep-queue chain with the other machine's too.
 *
 * No cmocka assertion in the steps: they may run on a pthread of their
 * own; what goes wrong is noted in d->bad.
 */
#define DET2_STEPS	8	/* create, wait, 5 captures, stop */
#define DET2_POLLS	1000000

struct det2 {
	uint64_t	seed;
	struct det_flags fl;
	struct sc_machine *m;
	struct sc_proc	*p;
	struct sc_thread *td[2];	/* the spinner, the sleeper */
	char		wchan;		/* the sleeper's wait channel */
	atomic_int	wakes;		/* the sleeper's wakeups */
	uint64_t	h;		/* the signature */
	uint64_t	steps;		/* sim_steps at the end */
	const char	*bad;		/* what went wrong, or NULL */
	atomic_int	done;		/* det2_alone() returned */
	struct sc_trace_record rec[NEVENTS];
};

static void
det2_sleeper(void *arg)
{
	struct det2 *d = arg;

	while (!atomic_load(&d->fl.stop)) {
		sc_sleep(&d->wchan, "det2");
		atomic_fetch_add(&d->wakes, 1);
	}
}

static void
det2_init(struct det2 *d, uint64_t seed)
{
	memset(d, 0, sizeof(*d) - sizeof(d->rec));
	d->seed = seed;
	d->h = 1469598103934665603ull;
}

/*
 * A call into d's machine: this pthread's sc_maybe_yield() and
 * sc_wakeup() are that machine's from here on (docs/determinism.md).
 */
static void
det2_enter(struct det2 *d)
{
	sc_proc_lock(d->p);
	sc_proc_unlock(d->p);
}

/* Step k of d's run. */
static void
det2_step(struct det2 *d, int k)
{
	struct sc_machine_config cfg;
	struct sc_counters c;
	struct sc_stack st;
	size_t n;
	long i;
	int error;

	if (d->bad != NULL)
		return;
	if (k == 0) {
		det_config(&cfg, d->seed);
		if (sc_machine_create(&cfg, &d->m) != 0 ||
		    sc_proc_create(d->m, "det2", &d->p) != 0 ||
		    sc_thread_create(d->p, "spin", det_spin, &d->fl,
		    &d->td[0]) != 0 ||
		    sc_thread_create(d->p, "sleeper", det2_sleeper, d,
		    &d->td[1]) != 0)
			d->bad = "create";
		return;
	}
	if (k == 1) {
		det2_enter(d);
		for (i = 0; atomic_load(&d->fl.started) == 0 &&
		    i < DET2_POLLS; i++)
			sc_maybe_yield();
		if (atomic_load(&d->fl.started) == 0)
			d->bad = "the spinner never ran";
		return;
	}
	if (k < DET2_STEPS - 1) {
		error = sc_stack_save_td_locked(d->p, d->td[0], &st);
		d->h = det_fold(d->h, (uint64_t)error);
		d->h = det_fold(d->h, st.depth);
		if (error != 0 || !sc_test_stack_has_chain(&st, det_chain, 3))
			d->bad = "a capture failed or missed the chain";
		sc_wakeup(&d->wchan);
		sc_maybe_yield();
		return;
	}
	det2_enter(d);
	atomic_store(&d->fl.stop, 1);
	for (i = 0; !sc_thread_exited(d->td[1]) && i < DET2_POLLS; i++) {
		sc_wakeup(&d->wchan);
		sc_maybe_yield();
	}
	if (sc_thread_join(d->td[0]) != 0 || sc_thread_join(d->td[1]) != 0)
		d->bad = "join";
	d->h = det_fold(d->h, (uint64_t)atomic_load(&d->wakes));
	sc_machine_counters(d->m, &c);
	d->steps = c.sim_steps;
	d->h = det_fold_trace_n(d->m, d->rec, d->h, &n);
	if (n >= NEVENTS || d->steps == 0)
		d->bad = "not a whole deterministic run";
	sc_machine_destroy(d->m);
}

/* A run alone, on the calling pthread. */
static void *
det2_alone(void *arg)
{
	struct det2 *d = arg;
	int k;

	for (k = 0; k < DET2_STEPS; k++)
		det2_step(d, k);
	atomic_store(&d->done, 1);
	return (NULL);
}

static struct det2 det2_run[2], det2_ref[2];

/* One pthread drives both runs: step k of one, then of the other. */
static void
det2_turns(void *arg)
{
	int k, first = *(int *)arg;

	for (k = 0; k < DET2_STEPS; k++) {
		det2_step(&det2_run[first], k);
		det2_step(&det2_run[!first], k);
	}
}

/* Each run as it went alone: the same signature, the same steps. */
static void
det2_check(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (det2_run[i].bad != NULL)
			fail_msg("run %d (seed %ju): %s", i,
			    (uintmax_t)det2_run[i].seed, det2_run[i].bad);
		assert_true(det2_run[i].h == det2_ref[i].h);
		assert_true(det2_run[i].steps == det2_ref[i].steps);
	}
}

static void
det2_refs(uint64_t s0, uint64_t s1)
{
	int i;

	det2_init(&det2_ref[0], s0);
	det2_init(&det2_ref[1], s1);
	for (i = 0; i < 2; i++) {
		(void)det2_alone(&det2_ref[i]);
		if (det2_ref[i].bad != NULL)
			fail_msg("seed %ju alone: %s",
			    (uintmax_t)det2_ref[i].seed, det2_ref[i].bad);
	}
	det2_init(&det2_run[0], s0);
	det2_init(&det2_run[1], s1);
}

/*
 * One pthread drives two machines in turns (one of them first, then the
 * other; two seeds, then one seed for both): both finish, each as it ran
 * alone.
 */
static void
test_two_machines_one_pthread(void **state)
{
	int first;

	(void)state;
	for (first = 0; first < 2; first++) {
		det2_refs(31, first == 0 ? 32 : 31);
		sc_test_run_bounded(det2_turns, &first);
		det2_check();
	}
}

/* Two pthreads, each driving a machine of its own, at once. */
static void
test_two_machines_two_pthreads(void **state)
{
	pthread_t t[2];
	int i;

	(void)state;
	det2_refs(33, 34);
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, det2_alone,
		    &det2_run[i]), 0);
	SC_WAIT_FOR(atomic_load(&det2_run[0].done) &&
	    atomic_load(&det2_run[1].done));
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	det2_check();
}

/*
 * sc__ds_enter()'s contract: an actor of a running deterministic machine
 * calls in only while it holds the run token.  A late actor waits for the
 * token at its first point, and a signal handler of its own calls in from
 * there: the call is reported (a panic, recorded here), where before it
 * ran beside the holder unnoticed and the seed no longer fixed the run.
 * The test thread, which holds the token, makes no call until the handler
 * has run: any point of its could hand the token over.
 */
static struct sc_machine *det_tok_m;
static atomic_int det_tok_tid;
static atomic_int det_tok_phase;	/* 1: handler ran; 2: late returned */

static void
det_tok_handler(int sig)
{
	struct sc_proc *p;
	int saved = errno;

	(void)sig;
	(void)sc_proc_create(det_tok_m, "handler", &p);
	atomic_store(&det_tok_phase, 1);
	errno = saved;
}

static void *
det_tok_late(void *arg)
{
	struct sc_proc *p;

	(void)arg;
	atomic_store(&det_tok_tid, (int)syscall(SYS_gettid));
	(void)sc_proc_create(det_tok_m, "late", &p);
	atomic_store(&det_tok_phase, 2);
	return (NULL);
}

/* Does thread tid sleep (state S: the late actor waits for the token)? */
static bool
det_tid_sleeps(int tid)
{
	char path[64], buf[256], *s;
	FILE *f;
	bool sleeps = false;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	if ((f = fopen(path, "r")) == NULL)
		return (false);
	if (fgets(buf, sizeof(buf), f) != NULL &&
	    (s = strrchr(buf, ')')) != NULL)
		sleeps = s[1] == ' ' && s[2] == 'S';
	fclose(f);
	return (sleeps);
}

/* Until cond, napping, without a call into the library (no point). */
#define DET_NAP_UNTIL(cond) do {					\
	struct timespec nap_ = { 0, 200 * 1000 };			\
	struct sc_deadline dl_;						\
									\
	sc_test_deadline_start(&dl_, SC_TEST_TIMEOUT_MS);		\
	while (!(cond)) {						\
		assert_false(sc_deadline_passed(&dl_));			\
		nanosleep(&nap_, NULL);					\
	}								\
} while (0)

static atomic_int det_q_sim;

static void
det_q_body(void *arg)
{
	(void)arg;
	atomic_store(&det_q_sim, sc_deterministic() ? 1 : 2);
}

/*
 * sc_deterministic(): 0 on a plain pthread before any call, 1 on a
 * simulated thread of a deterministic machine and on the plain pthread
 * that called into it, 0 again for one that calls into a machine of real
 * concurrency, and 0 on that machine's threads.  sc_test_deadline_poll()
 * relies on it to nap in real mode only.
 */
static void
test_deterministic_query(void **state)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	struct sc_proc *p;
	struct sc_thread *td;
	int seed;

	(void)state;
	for (seed = 1; seed >= 0; seed--) {
		atomic_store(&det_q_sim, 0);
		det_config(&cfg, (uint64_t)seed);
		assert_int_equal(sc_machine_create(&cfg, &m), 0);
		assert_int_equal(sc_proc_create(m, "q", &p), 0);
		assert_int_equal(sc_thread_create(p, "q", det_q_body, NULL,
		    &td), 0);
		assert_int_equal(sc_deterministic(), seed);
		SC_WAIT_FOR(atomic_load(&det_q_sim) != 0);
		assert_int_equal(atomic_load(&det_q_sim), seed ? 1 : 2);
		assert_int_equal(sc_thread_join(td), 0);
		sc_machine_destroy(m);
	}
	assert_int_equal(sc_deterministic(), 0);
}

static void
test_enter_without_token(void **state)
{
	struct sc_machine_config cfg;
	struct sigaction sa, old;
	pthread_t t;

	(void)state;
#if defined(SC_SANITIZER_THREAD)
	/* TSan delivers an asynchronous signal at a point of its own choice,
	 * not while the late actor waits in its futex: the handler's call
	 * would not come at the moment this test sets up. */
	skip();
#endif
	atomic_store(&det_tok_tid, 0);
	atomic_store(&det_tok_phase, 0);
	sc_test_panic_reset();
	sc_set_panic_handler(sc_test_panic_record);
	det_config(&cfg, 7);
	assert_int_equal(sc_machine_create(&cfg, &det_tok_m), 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = det_tok_handler;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR2, &sa, &old), 0);
	assert_int_equal(pthread_create(&t, NULL, det_tok_late, NULL), 0);
	DET_NAP_UNTIL(atomic_load(&det_tok_tid) != 0 &&
	    det_tid_sleeps(atomic_load(&det_tok_tid)));
	assert_int_equal(pthread_kill(t, SIGUSR2), 0);
	DET_NAP_UNTIL(atomic_load(&det_tok_phase) != 0);
	assert_int_equal(sc_test_panic_count(), 1);
	assert_non_null(strstr(sc_test_panic_msg(), "run token"));
	/* The test thread's points let the late actor run and return. */
	SC_WAIT_FOR(atomic_load(&det_tok_phase) == 2);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(sigaction(SIGUSR2, &old, NULL), 0);
	sc_machine_destroy(det_tok_m);
	assert_int_equal(sc_test_panic_count(), 1);
	sc_set_panic_handler(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_seed_same_run),
		cmocka_unit_test(test_pct_same_run),
		cmocka_unit_test(test_takeback_same_run),
		cmocka_unit_test(test_spinwait_needs_no_takeback),
		cmocka_unit_test(test_waiters_sleep),
		cmocka_unit_test(test_tick_preempts_same_run),
		cmocka_unit_test(test_env_seed),
		cmocka_unit_test(test_env_seed_not_a_seed),
		cmocka_unit_test(test_env_seed_helper),
		cmocka_unit_test(test_channels_do_not_matter),
		cmocka_unit_test(test_stale_actor),
		cmocka_unit_test(test_pin),
		cmocka_unit_test(test_two_machines_one_pthread),
		cmocka_unit_test(test_two_machines_two_pthreads),
		cmocka_unit_test(test_enter_without_token),
		cmocka_unit_test(test_deterministic_query),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
