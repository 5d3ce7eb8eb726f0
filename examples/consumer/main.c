/*
 * An out-of-tree stackcap consumer: create a machine, put one thread to
 * sleep at the end of a chain of named calls, capture its process the way
 * `procstat -kk` reads kern.proc.kstack (sc_proc_kstack), print it, and
 * check that the capture holds the chain.
 *
 * Exit status: 0 when the sleeping thread's stack contains
 * consumer_leaf <- consumer_middle <- consumer_main, in that order; 1
 * otherwise.
 *
 * Build it with CMake (find_package(stackcap)) or with the Makefile
 * (pkg-config stackcap); tools/check_package.sh does both.  The capture is
 * a frame-pointer walk: compile with -fno-omit-frame-pointer.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <stackcap.h>
#include <stackcap/testing.h>

#define NFRAMES	3
static const char *const chain[NFRAMES] = {
	/* innermost first */
	"consumer_leaf", "consumer_middle", "consumer_main"
};

static _Atomic int done;	/* also the wait channel */

/*
 * SC_NOIPA and SC_BARRIER() (stackcap/testing.h): each function keeps a
 * frame of its own and the call is not a tail call, so every name of the
 * chain is on the stack.
 */

SC_NOIPA static void
consumer_leaf(void)
{
	while (!atomic_load(&done))
		sc_sleep(&done, "chain"); /* may return spuriously: loop */
	SC_BARRIER();
}

SC_NOIPA static void
consumer_middle(void)
{
	consumer_leaf();
	SC_BARRIER();
}

SC_NOIPA static void
consumer_main(void *arg)
{
	(void)arg;
	consumer_middle();
	SC_BARRIER();
}

/* Wait (bounded: 10 s) until td sleeps and is off every CPU. */
static int
wait_asleep(struct sc_thread *td)
{
	struct timespec ts = { 0, 1000 * 1000 };
	int i;

	for (i = 0; i < 10000; i++) {
		if (sc_thread_state(td) == SC_TDS_INHIBITED &&
		    (sc_thread_inhibitors(td) & SC_TDI_SLEEPING) != 0 &&
		    sc_thread_oncpu(td) == SC_NOCPU)
			return (0);
		nanosleep(&ts, NULL);
	}
	return (ETIMEDOUT);
}

/* Does st hold chain[0..NFRAMES) in this order (other frames between)? */
static int
has_chain(const struct sc_stack *st)
{
	char name[128];
	int i, j = 0;

	for (i = 0; i < st->depth && j < NFRAMES; i++)
		if (sc_symbolize(st->pcs[i], name, sizeof(name), NULL) == 0 &&
		    strcmp(name, chain[j]) == 0)
			j++;
	return (j == NFRAMES);
}

static const char *
state_name(int state)
{
	switch (state) {
	case SC_KKST_STATE_STACKOK:	return ("stack");
	case SC_KKST_STATE_SWAPPED:	return ("<swapped>");
	case SC_KKST_STATE_RUNNING:	return ("<running>");
	default:			return ("?");
	}
}

int
main(void)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	struct sc_proc *p;
	struct sc_thread *td;
	struct sc_kstack kk[4];
	char buf[1024];
	size_t i, n;
	int error, found = 0;

	sc_machine_config_init(&cfg);
	cfg.ncpu = 2;
	if ((error = sc_machine_create(&cfg, &m)) != 0) {
		fprintf(stderr, "sc_machine_create: %s\n", strerror(error));
		return (1);
	}
	if ((error = sc_proc_create(m, "consumer", &p)) != 0 ||
	    (error = sc_thread_create(p, "sleeper", consumer_main, NULL,
	    &td)) != 0 || (error = wait_asleep(td)) != 0) {
		fprintf(stderr, "setup: %s\n", strerror(error));
		sc_machine_destroy(m);
		return (1);
	}

	/* kern.proc.kstack: the proc lock, then each thread's lock. */
	sc_proc_kstack(p, kk, sizeof(kk) / sizeof(kk[0]), &n);
	printf("%5s %6s %-19s %-19s %s\n", "PID", "TID", "COMM", "TDNAME",
	    "KSTACK");
	for (i = 0; i < n && i < sizeof(kk) / sizeof(kk[0]); i++) {
		if (kk[i].state == SC_KKST_STATE_STACKOK)
			sc_stack_format_kk(&kk[i].stack, buf, sizeof(buf));
		else
			snprintf(buf, sizeof(buf), "%s",
			    state_name(kk[i].state));
		printf("%5d %6d %-19s %-19s %s\n", sc_proc_pid(p), kk[i].tid,
		    sc_proc_comm(p), kk[i].tdname, buf);
		if (kk[i].tid == sc_thread_tid(td) &&
		    kk[i].state == SC_KKST_STATE_STACKOK)
			found = has_chain(&kk[i].stack);
	}

	atomic_store(&done, 1);
	sc_wakeup(&done);
	sc_thread_join(td);
	sc_machine_destroy(m);

	if (!found) {
		fprintf(stderr, "FAIL: the capture of \"sleeper\" lacks %s <- "
		    "%s <- %s\n", chain[0], chain[1], chain[2]);
		return (1);
	}
	printf("ok: the capture holds %s <- %s <- %s\n", chain[0], chain[1],
	    chain[2]);
	return (0);
}
