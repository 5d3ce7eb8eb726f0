/*
 * sc_host_watchdog_arm(): for a test that hangs, where every thread was.
 * A thread of its own sleeps until the bound (a condition variable on
 * CLOCK_MONOTONIC), then dumps every thread to stderr and aborts.  Not a
 * signal handler: the dump opens /proc, allocates and symbolises.
 *
 * A bound that has passed is final: once the deadline is behind us the
 * process aborts, whether the watchdog thread or the test gets to the
 * lock first.  A disarm (or a re-arm) that comes late does not return:
 * it hands the firing to the watchdog and waits for the abort, so the
 * outcome depends on when the test finished, never on which thread the
 * host scheduled first, and no disarm returns to a caller that the dump
 * then kills.
 *
 * Kernel counterpart: none (the kernel's deadlock watchdogs, such as
 * sys/kern/kern_clock.c's deadlkres(), print and panic the same way).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "host_var.h"

static pthread_mutex_t sc_wd_mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sc_wd_cv;
static uint64_t sc_wd_deadline;		/* (w: sc_wd_mtx) 0: disarmed */
static uint64_t sc_wd_bound;		/* (w) what was armed, for the dump */
static bool sc_wd_running;		/* (w) */

/*
 * Called with sc_wd_mtx held by a disarm or re-arm after the deadline: the
 * test overran, so the watchdog fires.  Wake it (it may still be asleep in
 * pthread_cond_timedwait(), or not yet scheduled at all) and wait for the
 * abort; the caller then shows in the dump, blocked here.
 */
static void
sc_wd_too_late(void)
{

	pthread_cond_broadcast(&sc_wd_cv);
	for (;;)
		pthread_cond_wait(&sc_wd_cv, &sc_wd_mtx);
}

/* Whether the armed bound has passed (sc_wd_mtx held). */
static bool
sc_wd_overran(void)
{

	return (sc_wd_deadline != 0 && sc_now_ns() >= sc_wd_deadline);
}

static void *
sc_wd_main(void *arg)
{
	struct timespec ts;
	char what[96];

	(void)arg;
	pthread_mutex_lock(&sc_wd_mtx);
	for (;;) {
		if (sc_wd_deadline == 0) {
			pthread_cond_wait(&sc_wd_cv, &sc_wd_mtx);
			continue;
		}
		/* The same test as a late disarm's: both sides agree. */
		if (sc_wd_overran())
			break;
		ts.tv_sec = (time_t)(sc_wd_deadline / 1000000000u);
		ts.tv_nsec = (long)(sc_wd_deadline % 1000000000u);
		pthread_cond_timedwait(&sc_wd_cv, &sc_wd_mtx, &ts);
	}
	snprintf(what, sizeof(what), "watchdog: over %.3f s; every thread:",
	    (double)sc_wd_bound / 1e9);
	pthread_mutex_unlock(&sc_wd_mtx);
	sc_host_dump(stderr, what, 1000000000L);
	abort();
}

int
sc_host_watchdog_arm(long timeout_ns)
{
	pthread_condattr_t ca;
	pthread_attr_t attr;
	pthread_t t;
	const char *env;
	double s;
	int error = 0;

	if ((env = getenv("STACKCAP_WATCHDOG")) != NULL && *env != '\0' &&
	    (s = strtod(env, NULL)) > 0)
		timeout_ns = (long)(s * 1e9);
	if (timeout_ns <= 0)
		return (EINVAL);
	pthread_mutex_lock(&sc_wd_mtx);
	if (!sc_wd_running) {
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&sc_wd_cv, &ca);
		pthread_condattr_destroy(&ca);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		error = pthread_create(&t, &attr, sc_wd_main, NULL);
		pthread_attr_destroy(&attr);
		if (error == 0) {
			pthread_setname_np(t, "sc-watchdog");
			sc_wd_running = true;
		}
	}
	if (error == 0 && sc_wd_overran())
		sc_wd_too_late();
	if (error == 0) {
		sc_wd_bound = (uint64_t)timeout_ns;
		sc_wd_deadline = sc_now_ns() + (uint64_t)timeout_ns;
		pthread_cond_signal(&sc_wd_cv);
	}
	pthread_mutex_unlock(&sc_wd_mtx);
	return (error);
}

void
sc_host_watchdog_disarm(void)
{
	pthread_mutex_lock(&sc_wd_mtx);
	if (sc_wd_overran())
		sc_wd_too_late();
	sc_wd_deadline = 0;
	if (sc_wd_running)
		pthread_cond_signal(&sc_wd_cv);
	pthread_mutex_unlock(&sc_wd_mtx);
}
