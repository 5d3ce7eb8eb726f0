/*
 * stackcap-demo --host-selftest: <stackcap/host.h> on this very process.
 *
 * Threads of the four kinds of tests/host_kinds.h (spinning in a
 * frame-pointer chain, sleeping in nanosleep(), blocked in
 * pthread_cond_wait(), and one that blocks the signal) and the main
 * thread; one sc_host_snapshot() of them all, printed like procstat -kk
 * and as folded stacks, and each verdict checked against what the thread
 * is: a thread that answered holds its own kind's chain and no other's,
 * the one that blocks is BLOCKED, the caller is SELF.  Exit status 1 when
 * one is wrong.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "demo.h"
#include "host_kinds.h"

#define DH_NTHREAD	7
#define DH_MAX		64
#define DH_TIMEOUT	1000000000L		/* 1 s: the bound of the call */

static const int dh_kinds[DH_NTHREAD] = { HK_SPIN, HK_SPIN, HK_SLEEP,
    HK_SLEEP, HK_COND, HK_COND, HK_BLOCK };

/* The verdict thread t should get, and whether it got it. */
static bool
dh_right(const struct sc_host_thread *t, const struct hk_thread *hk,
    size_t nhk, pid_t self, const char **why)
{
	size_t k;

	if (t->tid == self) {
		*why = "the caller, walked directly";
		return (t->verdict == SC_HOST_SELF);
	}
	for (k = 0; k < nhk; k++) {
		if (atomic_load(&hk[k].tid) != t->tid)
			continue;
		if (hk[k].kind == HK_BLOCK) {
			*why = "blocks the signal";
			return (t->verdict == SC_HOST_BLOCKED);
		}
		*why = "its own chain";
		return (t->verdict == SC_HOST_OK &&
		    hk_holds(&t->stack, hk[k].kind));
	}
	*why = "not one of the demo's";
	return (true);
}

static int
dh_report(const struct sc_host_thread *t, size_t n, const struct hk_thread
    *hk, size_t nhk)
{
	pid_t self = (pid_t)syscall(SYS_gettid);
	const char *why;
	size_t i;
	int wrong = 0;

	printf("\nEach verdict against what the thread is:\n");
	for (i = 0; i < n; i++) {
		bool ok = dh_right(&t[i], hk, nhk, self, &why);

		printf("  %-7d %-16s %-9s %s (%s)\n", (int)t[i].tid,
		    t[i].name, sc_host_verdict_name(t[i].verdict),
		    ok ? "right" : "WRONG", why);
		if (!ok)
			wrong++;
	}
	if (wrong == 0)
		printf("every verdict right, every answer from the thread "
		    "asked\n");
	else
		printf("%d verdicts wrong\n", wrong);
	return (wrong);
}

int
demo_host_selftest(const struct demo_opts *o)
{
	struct hk_thread hk[DH_NTHREAD];
	struct sc_host_thread t[DH_MAX];
	FILE *jf = NULL;
	uint64_t t0, took;
	size_t n = 0, i, started;
	int error, wrong;

	if (o->json != NULL && (jf = fopen(o->json, "w")) == NULL) {
		fprintf(stderr, "stackcap-demo: --json %s: %s\n", o->json,
		    strerror(errno));
		return (2);
	}
	hk_init();
	if (sc_host_signal() == 0) {
		fprintf(stderr, "stackcap-demo: no real-time signal free for "
		    "<stackcap/host.h>\n");
		if (jf != NULL)
			fclose(jf);
		return (1);
	}
	for (started = 0; started < DH_NTHREAD; started++)
		if ((error = hk_start(&hk[started], dh_kinds[started],
		    0)) != 0) {
			fprintf(stderr, "stackcap-demo: pthread_create: %s\n",
			    strerror(error));
			hk_stop_all(hk, started);
			if (jf != NULL)
				fclose(jf);
			return (1);
		}
	t0 = sc_now_ns();
	error = sc_host_snapshot(t, DH_MAX, &n, DH_TIMEOUT);
	took = sc_now_ns() - t0;
	if (error == 0) {
		printf("stackcap-demo --host-selftest: pid %d, %zu threads "
		    "(spinning, sleeping, waiting on a condition variable, "
		    "one blocking signal %d), one sc_host_snapshot() in "
		    "%.2f ms, bound %.0f ms\n\n", (int)getpid(), n,
		    sc_host_signal(), (double)took / 1e6,
		    (double)DH_TIMEOUT / 1e6);
		sc_host_print(stdout, t, n);
		printf("\nFolded (flame graphs: comm;thread;outer;...;inner "
		    "count):\n");
		sc_host_print_folded(stdout, t, n);
		printf("\nFrames marked '*' came from libunwind (glibc has no "
		    "frame pointers), the others from the frame-pointer "
		    "walk.\n");
		if (jf != NULL)
			sc_host_print_json(jf, t, n);
	}
	wrong = error == 0 ? dh_report(t, n, hk, DH_NTHREAD) : 0;
	hk_stop_all(hk, DH_NTHREAD);
	if (jf != NULL && fclose(jf) != 0 && error == 0) {
		fprintf(stderr, "stackcap-demo: --json %s: %s\n", o->json,
		    strerror(errno));
		return (1);
	}
	if (error != 0) {
		fprintf(stderr, "stackcap-demo: sc_host_snapshot: %s\n",
		    strerror(error));
		return (1);
	}
	for (i = 0; i < n; i++)
		if (t[i].verdict == SC_HOST_TIMEDOUT)
			fprintf(stderr, "stackcap-demo: thread %d did not "
			    "answer within the bound\n", (int)t[i].tid);
	return (wrong == 0 ? 0 : 1);
}
