/*
 * Threads of known kinds for the tests, the benchmark and the demo of
 * <stackcap/host.h>: spinning in a frame-pointer chain, sleeping in
 * nanosleep(), blocked in pthread_cond_wait(), and blocking the signal.
 * Header only (static): each program that includes it has its own.
 */
#ifndef SC_HOST_KINDS_H
#define SC_HOST_KINDS_H

#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <stackcap/host.h>
#include <stackcap/testing.h>

enum { HK_SPIN, HK_SLEEP, HK_COND, HK_BLOCK, HK_NKINDS };

static const char *const hk_names[HK_NKINDS] = { "hk-spin", "hk-sleep",
    "hk-cond", "hk-block" };

struct hk_thread {
	pthread_t	pt;
	_Atomic pid_t	tid;		/* set by the thread, then ready */
	int		kind;
};

static _Atomic int hk_stop;
static pthread_mutex_t hk_mx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hk_cv = PTHREAD_COND_INITIALIZER;

SC_NOIPA static void
hk_spin_inner(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&hk_stop, memory_order_relaxed))
		SC_BARRIER();
}
SC_CHAIN(hk_spin_mid, hk_spin_inner)
SC_CHAIN(hk_spin_outer, hk_spin_mid)

static __attribute__((unused)) void
hk_nap(void)
{
	struct timespec ts = { 0, 1000000 };

	nanosleep(&ts, NULL);	/* EINTR by a request: loop anyway */
}

SC_NOIPA static void
hk_sleep_loop(void *arg)
{
	(void)arg;
	while (!atomic_load(&hk_stop))
		hk_nap();
}
SC_CHAIN(hk_sleep_outer, hk_sleep_loop)

SC_NOIPA static void
hk_cond_loop(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&hk_mx);
	while (!atomic_load(&hk_stop))
		pthread_cond_wait(&hk_cv, &hk_mx);
	pthread_mutex_unlock(&hk_mx);
}
SC_CHAIN(hk_cond_outer, hk_cond_loop)

SC_NOIPA static void
hk_block_loop(void *arg)
{
	(void)arg;
	while (!atomic_load(&hk_stop))
		hk_nap();
}
SC_CHAIN(hk_block_outer, hk_block_loop)

static __attribute__((unused)) void *
hk_main(void *arg)
{
	struct hk_thread *t = arg;
	static void (*const fn[HK_NKINDS])(void *) = { hk_spin_outer,
	    hk_sleep_outer, hk_cond_outer, hk_block_outer };
	sigset_t set;

	pthread_setname_np(pthread_self(), hk_names[t->kind]);
	if (t->kind == HK_BLOCK) {
		sigemptyset(&set);
		sigaddset(&set, sc_host_signal());
		pthread_sigmask(SIG_BLOCK, &set, NULL);
	}
	atomic_store(&t->tid, (pid_t)syscall(SYS_gettid));
	fn[t->kind](NULL);
	SC_BARRIER();
	return (NULL);
}

/*
 * Start a thread of kind (stack of stacksize bytes, 0: the default) and
 * wait until it runs.  The signal must be chosen first (HK_BLOCK blocks
 * it): hk_init() does.  Returns 0 or an errno.
 */
static __attribute__((unused)) int
hk_start(struct hk_thread *t, int kind, size_t stacksize)
{
	pthread_attr_t attr;
	int error;

	t->kind = kind;
	atomic_store(&t->tid, 0);
	pthread_attr_init(&attr);
	if (stacksize != 0)
		pthread_attr_setstacksize(&attr, stacksize);
	error = pthread_create(&t->pt, &attr, hk_main, t);
	pthread_attr_destroy(&attr);
	while (error == 0 && atomic_load(&t->tid) == 0)
		sched_yield();
	return (error);
}

/* Choose the signal (a capture of the caller). */
static __attribute__((unused)) void
hk_init(void)
{
	struct sc_stack st;

	atomic_store(&hk_stop, 0);
	(void)sc_host_capture((pid_t)syscall(SYS_gettid), &st, 1000000000L);
}

static __attribute__((unused)) void
hk_stop_all(struct hk_thread *t, size_t n)
{
	size_t i;

	atomic_store(&hk_stop, 1);
	pthread_mutex_lock(&hk_mx);
	pthread_cond_broadcast(&hk_cv);
	pthread_mutex_unlock(&hk_mx);
	for (i = 0; i < n; i++)
		pthread_join(t[i].pt, NULL);
	atomic_store(&hk_stop, 0);
}

/* sc_symbolize(), remembered: the same return addresses come again. */
#define HK_NCACHE	4096
static struct { uintptr_t pc; char name[40]; } hk_cache[HK_NCACHE];
static pthread_mutex_t hk_cache_mx = PTHREAD_MUTEX_INITIALIZER;

static __attribute__((unused)) void
hk_name(uintptr_t pc, char *name, size_t len)
{
	size_t h = (size_t)(pc * 0x9e3779b97f4a7c15ull >> 52) % HK_NCACHE;

	pthread_mutex_lock(&hk_cache_mx);
	if (hk_cache[h].pc != pc) {
		if (sc_symbolize(pc, hk_cache[h].name,
		    sizeof(hk_cache[h].name), NULL) != 0)
			hk_cache[h].name[0] = '\0';
		hk_cache[h].pc = pc;
	}
	snprintf(name, len, "%s", hk_cache[h].name);
	pthread_mutex_unlock(&hk_cache_mx);
}

/* The index of the first frame of st symbolised as fn, or -1. */
static __attribute__((unused)) int
hk_frame(const struct sc_stack *st, const char *fn)
{
	char name[40];
	int i;

	for (i = 0; i < st->depth; i++) {
		hk_name(st->pcs[i], name, sizeof(name));
		if (strcmp(name, fn) == 0)
			return (i);
	}
	return (-1);
}

/* The frames a kind's stack must hold, outer last. */
static const char *const hk_chain[HK_NKINDS][3] = {
	{ "hk_spin_inner", "hk_spin_mid", "hk_spin_outer" },
	{ "hk_sleep_loop", "hk_sleep_outer", NULL },
	{ "hk_cond_loop", "hk_cond_outer", NULL },
	{ "hk_block_loop", "hk_block_outer", NULL },
};

/* Does st hold kind's chain, in order?  (Any other kind's frame: no.) */
static __attribute__((unused)) int
hk_holds(const struct sc_stack *st, int kind)
{
	int i, k, at, last = -1;

	for (k = 0; k < HK_NKINDS; k++)
		for (i = 0; i < 3 && hk_chain[k][i] != NULL; i++) {
			at = hk_frame(st, hk_chain[k][i]);
			if (k != kind && at >= 0)
				return (0);
			if (k == kind && at <= last)
				return (0);
			if (k == kind)
				last = at;
		}
	return (1);
}

#endif /* !SC_HOST_KINDS_H */
