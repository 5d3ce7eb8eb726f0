/*
 * <stackcap/host.h> (src/host_*.c): every verdict, bad input, the outputs,
 * and the failure modes of other in-process dumpers, each a named test.
 * Under TSan a handler runs only at an interceptor, late and with a
 * context that is no longer the thread's (docs/host.md): there the tests
 * check the handshake (verdicts, identity, bounds) and skip what a walk
 * finds, and no spinning thread is asked (it never reaches one).
 */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <errno.h>
#include <libunwind.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "stackcap/cmocka.h"
#include "host_kinds.h"
#include "host_var.h"

#define TMO	2000000000L		/* a bound for a hang, not a timing */

#if defined(SC_SANITIZER_THREAD)
#define HK_WALKS	0
#else
#define HK_WALKS	1
#endif

/*
 * A thread that answered, proven.  Under TSan the handler runs at an
 * interceptor, in libtsan's text, where no walk starts: the answer is
 * EMPTY there, and what is checked is that it came, from the thread
 * asked.
 */
#define HK_ANSWERED(v)	((v) == SC_HOST_OK ||				\
	    (!HK_WALKS && (v) == SC_HOST_EMPTY))

static pid_t
hk_gettid(void)
{
	return ((pid_t)syscall(SYS_gettid));
}

static int
setup(void **state)
{
	(void)state;
	hk_init();
	return (sc_host_signal() != 0 ? 0 : -1);
}

/* The caller: SELF, walked directly, from its caller on. */
SC_NOIPA static int
self_leaf(struct sc_stack *st)
{
	int v = sc_host_capture(hk_gettid(), st, TMO);

	SC_BARRIER();
	return (v);
}

static void
test_host_self(void **state)
{
	struct sc_stack st;

	(void)state;
	assert_int_equal(self_leaf(&st), SC_HOST_SELF);
	assert_true(st.depth > 0);
	assert_int_equal(hk_frame(&st, "self_leaf"), 0);
	assert_true(hk_frame(&st, "test_host_self") > 0);
}

/* Each kind's verdict and chain, through sc_host_capture(). */
static void
test_host_capture_kinds(void **state)
{
	struct hk_thread t[HK_NKINDS];
	struct sc_stack st;
	int k, v;

	(void)state;
	for (k = 0; k < HK_NKINDS; k++)
		assert_int_equal(hk_start(&t[k], k, 0), 0);
	for (k = 0; k < HK_NKINDS; k++) {
		if (k == HK_SPIN && !HK_WALKS)
			continue;
		v = sc_host_capture(atomic_load(&t[k].tid), &st, TMO);
		if (k == HK_BLOCK) {
			assert_int_equal(v, SC_HOST_BLOCKED);
			assert_int_equal(st.depth, 0);
			continue;
		}
		assert_true(HK_ANSWERED(v));
		if (HK_WALKS && !hk_holds(&st, k)) {
			sc_stack_print(stderr, &st);
			fail_msg("kind %s: its chain is not on its stack",
			    hk_names[k]);
		}
	}
	hk_stop_all(t, HK_NKINDS);
}

/* The frames of a spinning chain came from frame pointers; those of
 * glibc's nanosleep from libunwind. */
static void
test_host_walker_per_frame(void **state)
{
	struct hk_thread t[2];
	struct sc_host_thread out[64];
	size_t n, i;
	int at, seen = 0;

	(void)state;
	if (!HK_WALKS)
		skip();
	assert_int_equal(hk_start(&t[0], HK_SPIN, 0), 0);
	assert_int_equal(hk_start(&t[1], HK_SLEEP, 0), 0);
	assert_int_equal(sc_host_snapshot(out, 64, &n, TMO), 0);
	for (i = 0; i < n; i++) {
		if (out[i].tid == atomic_load(&t[0].tid)) {
			assert_true(HK_ANSWERED(out[i].verdict));
			/* The interrupted pc, a step (the leaf keeps no
			 * frame), then frame pointers. */
			assert_int_equal(hk_frame(&out[i].stack,
			    "hk_spin_inner"), 0);
			assert_int_equal(out[i].unwound & 1, 0);
			at = hk_frame(&out[i].stack, "hk_spin_outer");
			assert_true(at > 1);
			assert_int_equal(out[i].unwound >> at, 0);
			seen++;
		} else if (out[i].tid == atomic_load(&t[1].tid)) {
			assert_true(HK_ANSWERED(out[i].verdict));
			at = hk_frame(&out[i].stack, "hk_sleep_outer");
			if (at <= 0)
				sc_stack_print(stderr, &out[i].stack);
			assert_true(at > 0);
			/* pcs[0] is in libc: from libunwind. */
			assert_true((out[i].unwound & 1) != 0);
			assert_int_equal(out[i].unwound >> at, 0);
			seen++;
		}
	}
	assert_int_equal(seen, 2);
	hk_stop_all(t, 2);
}

/*
 * ClickHouse 57907: a thread that blocks the signal got another thread's
 * stack.  Here it is BLOCKED, with no stack, and every other thread's
 * stack is its own.
 */
static void
test_host_blocked_never_wrong_thread(void **state)
{
	struct hk_thread t[6];
	struct sc_host_thread out[64];
	uint64_t wrong = atomic_load(&sc__host_wrong);
	size_t n, i, k;
	int kind;

	(void)state;
	for (k = 0; k < 6; k++)
		assert_int_equal(hk_start(&t[k], k % 2 ? HK_BLOCK :
		    HK_WALKS ? HK_SPIN : HK_SLEEP, 0), 0);
	assert_int_equal(sc_host_snapshot(out, 64, &n, TMO), 0);
	for (i = 0; i < n; i++)
		for (k = 0; k < 6; k++) {
			if (out[i].tid != atomic_load(&t[k].tid))
				continue;
			kind = t[k].kind;
			assert_string_equal(out[i].name, hk_names[kind]);
			if (kind == HK_BLOCK) {
				assert_int_equal(out[i].verdict,
				    SC_HOST_BLOCKED);
				assert_int_equal(out[i].stack.depth, 0);
			} else {
				assert_true(HK_ANSWERED(out[i].verdict));
				assert_true(!HK_WALKS ||
				    hk_holds(&out[i].stack, kind));
			}
		}
	assert_int_equal(atomic_load(&sc__host_wrong), wrong);
	hk_stop_all(t, 6);
}

/* A handler held in the test hook until released. */
static _Atomic pid_t hold_tid;
static _Atomic int hold_release, hold_entered, hold_inner;
static struct sc_stack hold_st;

static void
hold_hook(int where)
{
	struct timespec ts = { 0, 1000000 };

	if (where != SC_HHOOK_CLAIMED ||
	    (pid_t)syscall(SYS_gettid) != atomic_load(&hold_tid))
		return;
	/* A call from a signal handler: a clear error, no deadlock. */
	atomic_store(&hold_inner, sc_host_capture(hk_gettid(), &hold_st,
	    TMO));
	atomic_store(&hold_entered, 1);
	while (!atomic_load(&hold_release))
		nanosleep(&ts, NULL);
}

static void
hold_arm(pid_t tid)
{
	atomic_store(&hold_release, 0);
	atomic_store(&hold_entered, 0);
	atomic_store(&hold_tid, tid);
	atomic_store(&sc__host_hook, hold_hook);
}

static void
hold_disarm(void)
{
	atomic_store(&hold_release, 1);
}

/*
 * brpc 3015: a handler that ran after the tracer gave up wrote into the
 * tracer's buffer.  Here the request times out, the caller's buffer is
 * never written after the call, and the slot the late handler finishes
 * in is not given to the next request until it is done.
 */
static void
test_host_late_handler_harmless(void **state)
{
	struct hk_thread t;
	struct sc_stack st, st2, canary;
	struct sc_deadline dl;
	uint32_t answers;
	int v;

	(void)state;
	assert_int_equal(hk_start(&t, HK_SLEEP, 0), 0);
	hold_arm(atomic_load(&t.tid));
	v = sc_host_capture(atomic_load(&t.tid), &st, 200000000L);
	assert_int_equal(v, SC_HOST_TIMEDOUT);
	assert_int_equal(st.depth, 0);
	memset(&st, 0xa5, sizeof(st));
	canary = st;
	sc_deadline_start(&dl, 10 * (uint64_t)TMO);
	while (!atomic_load(&hold_entered) && !sc_deadline_passed(&dl))
		sched_yield();
	assert_true(atomic_load(&hold_entered));
	assert_int_equal(atomic_load(&hold_inner), -EDEADLK);
	/* The held handler claimed its slot: the next request goes to
	 * another once the held one is done, and is answered. */
	answers = atomic_load(&sc__host_answers);
	atomic_store(&hold_tid, 0);
	hold_disarm();
	v = sc_host_capture(atomic_load(&t.tid), &st2, TMO);
	assert_true(HK_ANSWERED(v));
	assert_true(!HK_WALKS || hk_holds(&st2, HK_SLEEP));
	while (atomic_load(&sc__host_answers) - answers < 2 &&
	    !sc_deadline_passed(&dl))
		sched_yield();
	assert_true(atomic_load(&sc__host_answers) - answers >= 2);
	/* The late answer landed in the library's slot, not in st. */
	assert_memory_equal(&st, &canary, sizeof(canary));
	hk_stop_all(&t, 1);
}

/* The first handler to run on entry_tid, held at its first step (before
 * its claim) for 300 ms. */
static _Atomic pid_t entry_tid;
static _Atomic int entry_held;

static void
entry_hook(int where)
{
	struct timespec ts = { 0, 1000000 };
	uint64_t until;

	if (where != SC_HHOOK_ENTRY ||
	    (pid_t)syscall(SYS_gettid) != atomic_load(&entry_tid) ||
	    atomic_exchange(&entry_held, 1) != 0)
		return;
	until = sc_now_ns() + 300000000u;
	while (sc_now_ns() < until)
		nanosleep(&ts, NULL);
}

/*
 * A thread that is answering is never BLOCKED.  Had the kernel added the
 * signal to the mask for the handler (no SA_NODEFER), status would say
 * "blocked" from the moment the signal is taken: a request whose handler
 * is slow to claim would read as a thread that blocks the signal, though
 * the program never did, and so would a second request whose signal
 * waits behind the first's handler.  Here the first request's handler is
 * held before its claim past the request's bound (TIMEDOUT, not
 * BLOCKED), and a second request comes while it is held: it waits for
 * the first signal to be taken, then is answered.
 */
static void
test_host_answering_never_blocked(void **state)
{
	struct hk_thread t;
	struct sc_stack st;
	int v;

	(void)state;
	assert_int_equal(hk_start(&t, HK_SLEEP, 0), 0);
	atomic_store(&entry_held, 0);
	atomic_store(&entry_tid, atomic_load(&t.tid));
	atomic_store(&sc__host_hook, entry_hook);
	v = sc_host_capture(atomic_load(&t.tid), &st, 100000000L);
	assert_int_equal(v, SC_HOST_TIMEDOUT);
	v = sc_host_capture(atomic_load(&t.tid), &st, TMO);
	assert_true(HK_ANSWERED(v));
	assert_true(!HK_WALKS || hk_holds(&st, HK_SLEEP));
	atomic_store(&sc__host_hook, NULL);
	hk_stop_all(&t, 1);
}

/*
 * ClickHouse 54321 (about 3 s for each thread that does not answer),
 * Chromium (forever for one that blocks): a thread whose handler never
 * finishes and one that blocks cost the one bound of the whole call.
 */
static void
test_host_never_answers_costs_the_bound(void **state)
{
	struct hk_thread t[3];
	struct sc_host_thread out[64];
	uint64_t t0, took;
	size_t n, i;
	long bound = 300000000L;

	(void)state;
	assert_int_equal(hk_start(&t[0], HK_SLEEP, 0), 0);
	assert_int_equal(hk_start(&t[1], HK_BLOCK, 0), 0);
	assert_int_equal(hk_start(&t[2], HK_COND, 0), 0);
	hold_arm(atomic_load(&t[0].tid));
	t0 = sc_now_ns();
	assert_int_equal(sc_host_snapshot(out, 64, &n, bound), 0);
	took = sc_now_ns() - t0;
	/* A hang check with a wide margin, not a timing. */
	assert_true(took < (uint64_t)bound + 10 * (uint64_t)TMO);
	for (i = 0; i < n; i++) {
		if (out[i].tid == atomic_load(&t[0].tid))
			assert_int_equal(out[i].verdict, SC_HOST_TIMEDOUT);
		if (out[i].tid == atomic_load(&t[1].tid))
			assert_int_equal(out[i].verdict, SC_HOST_BLOCKED);
		if (out[i].tid == atomic_load(&t[2].tid))
			assert_true(HK_ANSWERED(out[i].verdict));
	}
	hold_disarm();
	atomic_store(&hold_tid, 0);
	hk_stop_all(t, 3);
}

/* A second snapshot while one runs: EAGAIN at its bound, no deadlock. */
struct held_capture {
	pid_t	tid;
	int	v;
};

static void *
held_capture(void *arg)
{
	struct held_capture *hc = arg;
	struct sc_stack st;

	hc->v = sc_host_capture(hc->tid, &st, 1000000000L);
	return (NULL);
}

static void
test_host_concurrent_snapshot(void **state)
{
	struct sc_host_thread out[64];
	struct held_capture hc;
	struct hk_thread t;
	struct sc_deadline dl;
	pthread_t other;
	size_t n;

	(void)state;
	assert_int_equal(hk_start(&t, HK_SLEEP, 0), 0);
	hold_arm(atomic_load(&t.tid));
	hc.tid = atomic_load(&t.tid);
	/* The first capture waits for the held handler, its lock held. */
	assert_int_equal(pthread_create(&other, NULL, held_capture, &hc), 0);
	sc_deadline_start(&dl, 10 * (uint64_t)TMO);
	while (!atomic_load(&hold_entered) && !sc_deadline_passed(&dl))
		sched_yield();
	assert_true(atomic_load(&hold_entered));
	assert_int_equal(sc_host_snapshot(out, 64, &n, 50000000L), EAGAIN);
	pthread_join(other, NULL);
	assert_int_equal(hc.v, SC_HOST_TIMEDOUT);
	hold_disarm();
	atomic_store(&hold_tid, 0);
	hk_stop_all(&t, 1);
}

/*
 * brpc 2983 and 3115 (deadlocks): requesters that are each other's
 * targets, threads in malloc() and the loader's lock, all at once; every
 * call returns.
 */
static _Atomic int churn_stop;

static void *
mallocer(void *arg)
{
	void *p;

	(void)arg;
	while (!atomic_load(&churn_stop)) {
		p = malloc(64 + (size_t)(rand() % 4096));
		free(p);
		{
			const struct sc_range *r;
			size_t nr;

			sc_text_ranges(&r, &nr);
		}
	}
	return (NULL);
}

static void *
snapper(void *arg)
{
	struct sc_host_thread out[64];
	size_t n;
	int i, e;

	for (i = 0; i < 50; i++) {
		e = sc_host_snapshot(out, 64, &n, 200000000L);
		if (e != 0 && e != EAGAIN)
			*(int *)arg = e;
	}
	return (NULL);
}

static void
test_host_no_deadlock(void **state)
{
	pthread_t m[2], s[2];
	struct timespec ts;
	int err = 0, i;

	(void)state;
	atomic_store(&churn_stop, 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(pthread_create(&m[i], NULL, mallocer, NULL),
		    0);
		assert_int_equal(pthread_create(&s[i], NULL, snapper, &err),
		    0);
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 120;
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_timedjoin_np(s[i], NULL, &ts), 0);
	atomic_store(&churn_stop, 1);
	for (i = 0; i < 2; i++)
		pthread_join(m[i], NULL);
	assert_int_equal(err, 0);
}

/* Bad input: each a clear error. */
static void
test_host_bad_input(void **state)
{
	struct sc_host_thread out[4];
	struct sc_stack st;
	size_t n = 99;

	(void)state;
	assert_int_equal(sc_host_snapshot(out, 4, NULL, TMO), EINVAL);
	assert_int_equal(sc_host_snapshot(NULL, 4, &n, TMO), EINVAL);
	assert_int_equal(sc_host_snapshot(out, 4, &n, 0), EINVAL);
	assert_int_equal(sc_host_snapshot(out, 4, &n, -1), EINVAL);
	assert_int_equal(sc_host_capture(hk_gettid(), NULL, TMO), -EINVAL);
	assert_int_equal(sc_host_capture(0, &st, TMO), -EINVAL);
	assert_int_equal(sc_host_capture(-5, &st, TMO), -EINVAL);
	assert_int_equal(sc_host_capture(hk_gettid(), &st, 0), -EINVAL);
	/* Another process's: init's, and our parent's. */
	assert_int_equal(sc_host_capture(1, &st, TMO), -ESRCH);
	assert_int_equal(sc_host_capture(getppid(), &st, TMO), -ESRCH);
	assert_int_equal(sc_host_capture(0x7ffffff0, &st, TMO), -ESRCH);
}

/* max too small: ENOSPC, *n the whole count, nothing past max written. */
static void
test_host_max_too_small(void **state)
{
	struct hk_thread t[3];
	struct sc_host_thread out[3];
	size_t n = 0;
	int k;

	(void)state;
	for (k = 0; k < 3; k++)
		assert_int_equal(hk_start(&t[k], HK_SLEEP, 0), 0);
	memset(out, 0x5a, sizeof(out));
	assert_int_equal(sc_host_snapshot(out, 2, &n, TMO), ENOSPC);
	assert_true(n >= 4);
	assert_true(out[0].verdict <= SC_HOST_SELF);
	assert_int_equal(((unsigned char *)&out[2])[0], 0x5a);
	assert_int_equal(sc_host_snapshot(NULL, 0, &n, TMO), ENOSPC);
	assert_true(n >= 4);
	hk_stop_all(t, 3);
}

/*
 * More threads than the listing's first guess (256): the second pass over
 * /proc/self/task read nothing (its descriptor's offset was at the end),
 * and the snapshot listed no thread at all.
 */
static void
test_host_many_threads(void **state)
{
	enum { NMANY = 300 };
	struct hk_thread *t = calloc(NMANY, sizeof(*t));
	struct sc_host_thread *out = calloc(NMANY + 64, sizeof(*out));
	size_t n, i, k, ours = 0;

	(void)state;
	assert_non_null(t);
	assert_non_null(out);
	for (k = 0; k < NMANY; k++)
		assert_int_equal(hk_start(&t[k], HK_COND, 128 * 1024), 0);
	assert_int_equal(sc_host_snapshot(NULL, 0, &n, TMO), ENOSPC);
	assert_true(n >= NMANY + 1);
	assert_int_equal(sc_host_snapshot(out, NMANY + 64, &n, TMO), 0);
	assert_true(n >= NMANY + 1);
	for (i = 0; i < n; i++)
		for (k = 0; k < NMANY; k++) {
			if (out[i].tid != atomic_load(&t[k].tid))
				continue;
			ours++;
			assert_true(HK_ANSWERED(out[i].verdict));
			assert_true(!HK_WALKS ||
			    hk_holds(&out[i].stack, HK_COND));
		}
	assert_int_equal(ours, NMANY);
	hk_stop_all(t, NMANY);
	free(out);
	free(t);
}

/* An exited main thread (a zombie leader) is EXITED; a joined thread's
 * tid is not ours (or EXITED, while the kernel finishes it). */
static void *
orphan(void *arg)
{
	struct sc_host_thread out[8];
	size_t n, i;
	int code = 3;

	(void)arg;
	for (i = 0; i < 200; i++) {
		struct timespec ts = { 0, 5000000 };

		nanosleep(&ts, NULL);
		if (sc_host_snapshot(out, 8, &n, TMO) != 0)
			_exit(2);
		for (i = 0; i < n; i++)
			if (out[i].tid == getpid())
				code = out[i].verdict == SC_HOST_EXITED ? 0 : 1;
		if (code != 1)
			break;
	}
	_exit(code);
}

static void
test_host_exited(void **state)
{
	struct hk_thread t;
	struct sc_stack st;
	pthread_t pt;
	pid_t pid, tid;
	int status, v;

	(void)state;
	assert_int_equal(hk_start(&t, HK_SLEEP, 0), 0);
	tid = atomic_load(&t.tid);
	hk_stop_all(&t, 1);
	/* pthread_join() returns when the kernel clears the thread's tid,
	 * before the kernel is done with the thread: it may still be listed,
	 * then EXITED. */
	v = sc_host_capture(tid, &st, TMO);
	assert_true(v == -ESRCH || v == SC_HOST_EXITED);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (pthread_create(&pt, NULL, orphan, NULL) != 0)
			_exit(4);
		pthread_exit(NULL);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Frames from here up, by libunwind, as a program of its own would. */
SC_NOIPA static int
own_backtrace(void **pcs, int max)
{
	return (unw_backtrace(pcs, max));
}

/*
 * The child of test_host_libunwind_left_alone: 0 when all held, else the
 * number of the check that failed.
 */
static int
libunwind_child(void)
{
	struct sc_host_thread out[4];
	void *pcs[2][32];
	unw_context_t uc;
	unw_cursor_t cur;
	Dl_info info;
	char *page;
	size_t n;
	/* Not unrolled: both backtraces from one call site. */
	volatile int rounds = 2;
	int i, depth[2];

	for (i = 0; i < rounds; i++) {
		if (i == 1 && sc_host_snapshot(out, 4, &n, TMO) != 0)
			return (1);
		depth[i] = own_backtrace(pcs[i], 32);
	}
	if (depth[0] < 2 || depth[0] != depth[1] ||
	    memcmp(pcs[0], pcs[1], sizeof(void *) * (size_t)depth[0]) != 0)
		return (2);
#if HK_WALKS
	/* The library's reader is in place (src/host_walk.c)... */
	if (dladdr((void *)(uintptr_t)unw_get_accessors(
	    unw_local_addr_space)->access_mem, &info) == 0 ||
	    strstr(info.dli_fname, "libunwind") != NULL)
		return (3);
#else
	(void)info;
#endif
	/* ...and another unwinding's reads are still checked: a context
	 * whose stack is a page that cannot be read gives an error, not a
	 * fault. */
	page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED || unw_getcontext(&uc) != 0)
		return (4);
	uc.uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)(page + 64);
	uc.uc_mcontext.gregs[REG_RBP] = (greg_t)(uintptr_t)(page + 128);
	uc.uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)own_backtrace + 1;
	if (unw_init_local2(&cur, &uc, UNW_INIT_SIGNAL_FRAME) == 0)
		(void)unw_step(&cur);
	return (0);
}

/*
 * The library changes libunwind's local address space (a reader of its
 * own, for the stack its handler walks), and nothing else a program that
 * also uses libunwind would see: the same frames before and after a
 * snapshot, and its reads outside our walk checked as before.  In a child:
 * a fault there ends the child, not the suite.
 */
static void
test_host_libunwind_left_alone(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(libunwind_child());
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status))
		fail_msg("the child died of signal %d", WTERMSIG(status));
	if (WEXITSTATUS(status) != 0)
		fail_msg("check %d failed in the child", WEXITSTATUS(status));
}

/* The signal: never taken from the program's handler. */
static void
prog_handler(int sig)
{
	(void)sig;
}

static void
test_host_signal_not_stolen(void **state)
{
	struct sigaction sa, ours, now;
	struct sc_host_thread out[64];
	int mine = sc_host_signal(), other = SIGRTMIN + 5;
	size_t n;

	(void)state;
	if (other == mine)
		other++;
	assert_int_equal(sc_host_set_signal(SIGRTMIN - 1), EINVAL);
	assert_int_equal(sc_host_set_signal(SIGRTMAX + 1), EINVAL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = prog_handler;
	assert_int_equal(sigaction(other, &sa, NULL), 0);
	assert_int_equal(sc_host_set_signal(other), EBUSY);
	assert_int_equal(sigaction(other, NULL, &now), 0);
	assert_ptr_equal(now.sa_handler, prog_handler);
	assert_int_equal(sc_host_signal(), mine);
	/* A program that replaced our handler after the first use. */
	assert_int_equal(sigaction(mine, &sa, &ours), 0);
	assert_int_equal(sc_host_snapshot(out, 64, &n, TMO), EBUSY);
	assert_int_equal(sigaction(mine, NULL, &now), 0);
	assert_ptr_equal(now.sa_handler, prog_handler);
	assert_int_equal(sigaction(mine, &ours, NULL), 0);
	assert_int_equal(sc_host_snapshot(out, 64, &n, TMO), 0);
	sa.sa_handler = SIG_DFL;
	sigaction(other, &sa, NULL);
}

/* The three outputs, read back. */
static void
test_host_outputs(void **state)
{
	struct hk_thread t[2];
	struct sc_host_thread out[64];
	cJSON *doc, *th, *it, *v;
	char *buf;
	size_t len, n;
	FILE *fp;
	int found = 0;

	(void)state;
	assert_int_equal(hk_start(&t[0], HK_COND, 0), 0);
	assert_int_equal(hk_start(&t[1], HK_BLOCK, 0), 0);
	assert_int_equal(sc_host_snapshot(out, 64, &n, TMO), 0);
	fp = open_memstream(&buf, &len);
	sc_host_print(fp, out, n);
	fclose(fp);
	assert_non_null(strstr(buf, "PID    TID COMM"));
	assert_non_null(strstr(buf, "hk-block         <blocked>"));
	assert_true(!HK_WALKS || strstr(buf, "hk_cond_outer+0x") != NULL);
	free(buf);
	fp = open_memstream(&buf, &len);
	sc_host_print_folded(fp, out, n);
	fclose(fp);
	assert_true(!HK_WALKS ||
	    strstr(buf, ";hk-cond;") != NULL);
	assert_true(!HK_WALKS ||
	    strstr(buf, ";hk_cond_outer;hk_cond_loop;") != NULL);
	assert_null(strstr(buf, "hk-block"));
	free(buf);
	fp = open_memstream(&buf, &len);
	sc_host_print_json(fp, out, n);
	fclose(fp);
	doc = cJSON_Parse(buf);
	assert_non_null(doc);
	th = cJSON_GetObjectItem(doc, "threads");
	assert_int_equal(cJSON_GetArraySize(th), (int)n);
	cJSON_ArrayForEach(it, th) {
		v = cJSON_GetObjectItem(it, "tid");
		if ((pid_t)v->valuedouble == atomic_load(&t[1].tid)) {
			assert_string_equal(cJSON_GetObjectItem(it,
			    "verdict")->valuestring, "blocked");
			found++;
		}
	}
	assert_int_equal(found, 1);
	cJSON_Delete(doc);
	free(buf);
	hk_stop_all(t, 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_self),
		cmocka_unit_test(test_host_capture_kinds),
		cmocka_unit_test(test_host_walker_per_frame),
		cmocka_unit_test(test_host_blocked_never_wrong_thread),
		cmocka_unit_test(test_host_late_handler_harmless),
		cmocka_unit_test(test_host_answering_never_blocked),
		cmocka_unit_test(test_host_never_answers_costs_the_bound),
		cmocka_unit_test(test_host_concurrent_snapshot),
		cmocka_unit_test(test_host_no_deadlock),
		cmocka_unit_test(test_host_bad_input),
		cmocka_unit_test(test_host_max_too_small),
		cmocka_unit_test(test_host_many_threads),
		cmocka_unit_test(test_host_exited),
		cmocka_unit_test(test_host_signal_not_stolen),
		cmocka_unit_test(test_host_libunwind_left_alone),
		cmocka_unit_test(test_host_outputs),
	};

	return (cmocka_run_group_tests(tests, setup, NULL));
}
