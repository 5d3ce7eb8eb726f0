/*
 * The churn stress of <stackcap/host.h>: threads that exit and are made
 * again (this host's pid_max is small, so tids are taken again within
 * seconds), masks blocked and unblocked, handlers held past the bound,
 * while a requester snapshots.  A wrong-thread answer is a thread whose
 * stack holds another kind's chain than its name says (tests/host_kinds.h),
 * or one that sc__host_wrong counted, and a wrong verdict a thread BLOCKED
 * that never blocks the signal.  STACKCAP_HOST_CHURN_SECONDS (default
 * 2) sets the length; docs/host.md has the long run's command.
 */
#include <stdio.h>
#include <stdlib.h>

#include "stackcap/cmocka.h"
#include "host_kinds.h"
#include "host_var.h"

#define NWORK	8

#if defined(SC_SANITIZER_THREAD)
#define HK_TSAN	1
#else
#define HK_TSAN	0
#endif

static _Atomic int churn_done;

/* The tid of a churn-a worker whose function has returned, by tid: glibc
 * (2.34 on, its bug 12889) then blocks every signal until the thread is
 * gone, and BLOCKED is its true verdict. */
#define NEXITING	65536
static _Atomic pid_t churn_exiting[NEXITING];

/*
 * A new thread starts with every signal blocked (glibc's pthread_create()
 * blocks them around clone() and start_thread() restores the mask before
 * the thread's function), so BLOCKED is true then too, and its name,
 * read at the snapshot's end, may be churn-a by that time.  churn_live
 * holds, by tid, 1 + the snapshots begun when the worker's function
 * began (0: not yet): a churn-a worker live before snapshot k began has
 * churn_live <= k, and its mask has not blocked the signal since.
 */
static _Atomic unsigned churn_snaps;
static _Atomic unsigned churn_live[NEXITING];

/* A worker: a kind, a while, then exit; HK_BLOCK toggles its mask. */
SC_NOIPA static void
churn_spin_a(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < 200 && !atomic_load(&churn_done); i++)
		hk_nap();
}
SC_CHAIN(churn_a, churn_spin_a)

SC_NOIPA static void
churn_spin_b(void *arg)
{
	sigset_t set;
	int i;

	(void)arg;
	sigemptyset(&set);
	sigaddset(&set, sc_host_signal());
	for (i = 0; i < 200 && !atomic_load(&churn_done); i++) {
		pthread_sigmask(i % 2 ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
		hk_nap();
	}
}
SC_CHAIN(churn_b, churn_spin_b)

static void *
churn_worker(void *arg)
{
	intptr_t kind = (intptr_t)arg;

	pid_t tid = (pid_t)syscall(SYS_gettid);

	atomic_store(&churn_exiting[tid % NEXITING], 0);
	atomic_store(&churn_live[tid % NEXITING], 0);
	pthread_setname_np(pthread_self(), kind ? "churn-b" : "churn-a");
	atomic_store(&churn_live[tid % NEXITING],
	    atomic_load(&churn_snaps) + 1);
	if (kind)
		churn_b(NULL);
	else
		churn_a(NULL);
	atomic_store(&churn_exiting[tid % NEXITING], tid);
	SC_BARRIER();
	return (NULL);
}

static void *
churn_spawner(void *arg)
{
	pthread_attr_t attr;
	pthread_t pt;
	unsigned seed = 1;

	(void)arg;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	while (!atomic_load(&churn_done)) {
		if (pthread_create(&pt, &attr, churn_worker,
		    (void *)(intptr_t)(rand_r(&seed) % 2)) != 0)
			hk_nap();
		else
			hk_nap();
	}
	pthread_attr_destroy(&attr);
	return (NULL);
}

/* Hold a few handlers past the bound: late answers (held after the
 * claim), and requests whose signal was taken but not yet claimed (held
 * before). */
static void
churn_hook(int where)
{
	struct timespec ts = { 0, 3000000 };
	long tid = syscall(SYS_gettid);

	if ((tid & 15) == (where == SC_HHOOK_CLAIMED ? 0 : 1))
		nanosleep(&ts, NULL);
}

static void
test_host_churn_no_wrong_thread(void **state)
{
	struct sc_host_thread out[256];
	pthread_t sp[2];
	const char *env = getenv("STACKCAP_HOST_CHURN_SECONDS");
	uint64_t end, wrong0 = atomic_load(&sc__host_wrong);
	long captures = 0, wrong = 0, verdicts[SC_HOST_SELF + 1] = { 0 };
	size_t n, i;
	unsigned snap, live;
	int e, a, b, k;

	(void)state;
	hk_init();
	end = sc_now_ns() + (uint64_t)((env != NULL ? atof(env) : 2.0) * 1e9);
	atomic_store(&sc__host_hook, churn_hook);
	for (k = 0; k < 2; k++)
		assert_int_equal(pthread_create(&sp[k], NULL, churn_spawner,
		    NULL), 0);
	while (sc_now_ns() < end) {
		snap = atomic_fetch_add(&churn_snaps, 1) + 1;
		e = sc_host_snapshot(out, 256, &n, 2000000L);
		assert_true(e == 0 || e == ENOSPC);
		for (i = 0; i < n && i < 256; i++) {
			verdicts[out[i].verdict]++;
			/* churn-a never blocks the signal but to start
			 * and to exit.  Under TSan its runtime does, while
			 * it runs a handler it deferred (every signal
			 * blocked). */
			live = atomic_load(&churn_live[out[i].tid %
			    NEXITING]);
			if (out[i].verdict == SC_HOST_BLOCKED && !HK_TSAN &&
			    strcmp(out[i].name, "churn-a") == 0 &&
			    live != 0 && live <= snap &&
			    atomic_load(&churn_exiting[out[i].tid %
			    NEXITING]) != out[i].tid) {
				fprintf(stderr, "wrong: tid %d churn-a "
				    "BLOCKED\n", (int)out[i].tid);
				wrong++;
			}
			if (out[i].verdict != SC_HOST_OK)
				continue;
			captures++;
			a = hk_frame(&out[i].stack, "churn_spin_a") >= 0 ||
			    hk_frame(&out[i].stack, "churn_a") >= 0;
			b = hk_frame(&out[i].stack, "churn_spin_b") >= 0 ||
			    hk_frame(&out[i].stack, "churn_b") >= 0;
			if ((a && strcmp(out[i].name, "churn-a") != 0) ||
			    (b && strcmp(out[i].name, "churn-b") != 0)) {
				fprintf(stderr, "wrong: tid %d name %s a %d "
				    "b %d\n", (int)out[i].tid, out[i].name,
				    a, b);
				sc_stack_print(stderr, &out[i].stack);
				wrong++;
			}
		}
	}
	atomic_store(&churn_done, 1);
	for (k = 0; k < 2; k++)
		pthread_join(sp[k], NULL);
	atomic_store(&sc__host_hook, NULL);
	printf("churn: %ld captures answered, %ld wrong; ok %ld empty %ld "
	    "blocked %ld exited %ld timedout %ld self %ld; stale signals "
	    "%lu\n", captures, wrong, verdicts[0], verdicts[1], verdicts[2],
	    verdicts[3], verdicts[4], verdicts[5],
	    (unsigned long)atomic_load(&sc__host_stale));
	assert_true(captures > 0);
	assert_int_equal(wrong, 0);
	assert_int_equal(atomic_load(&sc__host_wrong), wrong0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_churn_no_wrong_thread),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
