/*
 * The demo machine of stackcap-demo: a few processes with FreeBSD-like
 * names whose threads settle in the states a busy FreeBSD box shows
 * (asleep in named call chains, swapped out, interrupt threads that never
 * ran, preempted by the clock or a better thread, running in the kernel,
 * running in user mode), then are torn down.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "demo.h"
#include "stackcap/testing.h"

/* A link of a call chain keeps its frame and its name (SC_NOIPA). */

#define DEMO_MAX_DD		6	/* extra running threads (--ncpu > 2) */
#define DEMO_SETTLE_MS		5000	/* bound of each wait for a state */
#define DEMO_REAP_MS		5000	/* bound of each wait for an exit */

/* ------------------------------------------------------------------------
 * The threads of the demo machine
 * ------------------------------------------------------------------------ */

/* Where a demo thread settles, and so what procstat shows for it. */
enum demo_role {
	ROLE_SLEEP,	/* asleep in its chain: a stack from its pcb */
	ROLE_SWAPPED,	/* asleep, then swapped out: <swapped> */
	ROLE_IWAIT,	/* an ithread that never ran: an empty stack */
	ROLE_PREEMPTED,	/* computing in the kernel at idle priority, then
			   preempted: a stack from its pcb, through the
			   interrupt that preempted it */
	ROLE_SPIN,	/* running in the kernel: a stack from an IPI */
	ROLE_USER	/* running in user mode: <running> */
};

/* One thread: its spec, then what the run fills in.  It is its own wchan. */
struct demo_td {
	const char	*comm;		/* its process */
	const char	*name;
	enum demo_role	role;
	void		(*fn)(void *);
	const char	*wmesg;		/* ROLE_SLEEP, ROLE_SWAPPED */
	bool		own_proc;	/* a process of its own, even if
					   another has the same comm */
	struct sc_thread *td;
	atomic_int	arrived;	/* the chain reached its loop */
};

/* Set once at teardown: every loop below ends. */
static atomic_int demo_stop;

static bool
demo_stopping(void)
{
	return (atomic_load(&demo_stop) != 0);
}

/* The bottom of every sleeping chain: sleep on d until teardown.  Inlined
 * so that the caller (a named link) is the frame above sc_sleep. */
static inline __attribute__((always_inline)) void
demo_sleep_loop(struct demo_td *d)
{
	atomic_store(&d->arrived, 1);
	while (!demo_stopping())
		sc_sleep(d, d->wmesg);
}

/*
 * The work of a running chain, a few microseconds of it.  An IPI mostly
 * lands here; the interrupted %rip is not recorded (as in the kernel), so
 * the stack shows its caller first.  GCC 12 gives a leaf that uses no stack
 * no frame record, -mno-omit-leaf-frame-pointer notwithstanding; taking the
 * frame's address makes it build one, or the caller would be missing too.
 */
SC_NOIPA static void
cpu_work(void)
{
	int i;

	__asm__ volatile("" : : "r"(__builtin_frame_address(0)));
	for (i = 0; i < 256; i++)
		__builtin_ia32_pause();
}

/* The bottom of every running chain: work in the kernel, preemptible. */
static inline __attribute__((always_inline)) void
demo_spin_loop(struct demo_td *d)
{
	atomic_store(&d->arrived, 1);
	while (!demo_stopping()) {
		cpu_work();
		sc_maybe_yield();
	}
}

/* syncer: sched_sync(), asleep between two passes over the worklist. */
SC_NOIPA static void
sched_sync(void *arg)
{
	demo_sleep_loop(arg);
	SC_BARRIER();
}
SC_CHAIN(syncer_loop, sched_sync)

/* nfsd: the master thread in the nfssvc(2) call, service threads in the
 * RPC server's pool, all waiting for requests. */
SC_NOIPA static void
svc_run_internal(void *arg)
{
	demo_sleep_loop(arg);
	SC_BARRIER();
}
SC_CHAIN(svc_run, svc_run_internal)
SC_CHAIN(nfsrvd_nfsd, svc_run)
SC_CHAIN(nfssvc_nfsd, nfsrvd_nfsd)
SC_CHAIN(nfsd_syscall, nfssvc_nfsd)
SC_CHAIN(svc_thread_start, svc_run_internal)

/* getty: read(2) on its terminal, waiting for input (then swapped out). */
SC_NOIPA static void
tty_wait(void *arg)
{
	demo_sleep_loop(arg);
	SC_BARRIER();
}
SC_CHAIN(ttydisc_read, tty_wait)
SC_CHAIN(ttydev_read, ttydisc_read)
SC_CHAIN(sys_read_tty, ttydev_read)
SC_CHAIN(getty_syscall, sys_read_tty)

/* sshd: select(2) on its sockets. */
SC_NOIPA static void
seltdwait(void *arg)
{
	demo_sleep_loop(arg);
	SC_BARRIER();
}
SC_CHAIN(kern_select, seltdwait)
SC_CHAIN(sys_select, kern_select)
SC_CHAIN(sshd_syscall, sys_select)

/* Interrupt threads: never scheduled here, so they never run. */
SC_NOIPA static void
ithread_loop(void *arg)
{
	demo_sleep_loop(arg);
	SC_BARRIER();
}

/* bufdaemon: flushing dirty buffers, on a CPU (maybe_yield() in its loop,
 * as flushbufqueues() has). */
SC_NOIPA static void
flushbufqueues(void *arg)
{
	demo_spin_loop(arg);
	SC_BARRIER();
}
SC_CHAIN(buf_flush, flushbufqueues)
SC_CHAIN(buf_daemon, buf_flush)

/* dd if=/dev/zero: copying zeroes in the kernel, on a CPU. */
SC_NOIPA static void
zero_read(void *arg)
{
	demo_spin_loop(arg);
	SC_BARRIER();
}
SC_CHAIN(devfs_read_f, zero_read)
SC_CHAIN(sys_read_zero, devfs_read_f)
SC_CHAIN(dd_syscall, sys_read_zero)

/* md5 -t: computing in user mode, on a CPU; never enters the kernel. */
SC_NOIPA static void
md5_timetrial(void *arg)
{
	struct demo_td *d = arg;

	atomic_store(&d->arrived, 1);
	while (!demo_stopping())
		__builtin_ia32_pause();
	SC_BARRIER();
}

/*
 * pagezero: FreeBSD's old idle-priority page zeroing thread
 * (sys/vm/vm_zeroidle.c, vm_pagezero() -> vm_page_zero_idle() ->
 * pmap_zero_page_idle(), gone from later releases), which set itself to
 * RTP_PRIO_IDLE.  Here it zeroes without any call into the library, so it
 * leaves its CPU only when it is preempted: by a better thread made
 * runnable (ULE's sched_shouldpreempt() takes the CPU from an idle-class
 * thread at once) or at its slice's end (4BSD), and stays on the run
 * queue while better threads keep every CPU.
 */
SC_NOIPA static void
pmap_zero_page_idle(void *arg)
{
	struct demo_td *d = arg;

	/* A frame record of its own, as cpu_work()'s: its caller is the
	 * interrupted frame's parent. */
	__asm__ volatile("" : : "r"(__builtin_frame_address(0)));
	atomic_store(&d->arrived, 1);
	/* The flag itself, not demo_stopping(): a build that does not
	 * inline it (ASan's) showed it as the interrupted function. */
	while (!atomic_load(&demo_stop))
		__builtin_ia32_pause();
	SC_BARRIER();
}
SC_CHAIN(vm_page_zero_idle, pmap_zero_page_idle)

SC_NOIPA static void
vm_pagezero(void *arg)
{
	(void)sc_thread_set_priority(sc_curthread(), SC_PRI_MAX_IDLE);
	vm_page_zero_idle(arg);
	SC_BARRIER();
}

/* fork_return(): the new thread leaves for user mode. */
SC_NOIPA static void
fork_return(void *arg)
{
	sc_user_call(md5_timetrial, arg);
	SC_BARRIER();
}

/*
 * The machine's threads, in creation order (pids and tids follow it).
 * The ones that compute come last: pagezero first among them, so that the
 * better threads made runnable after it take its CPU; the user-mode one
 * last.
 */
#define DEMO_TD(c, n, r, f, w, own)					\
	{ .comm = (c), .name = (n), .role = (r), .fn = (f),		\
	  .wmesg = (w), .own_proc = (own) }
static const struct demo_td demo_fixed[] = {
	DEMO_TD("intr", "swi4: clock (0)", ROLE_IWAIT, ithread_loop, "-", 0),
	DEMO_TD("intr", "irq16: em0", ROLE_IWAIT, ithread_loop, "-", 0),
	DEMO_TD("syncer", "syncer", ROLE_SLEEP, syncer_loop, "syncer", 0),
	DEMO_TD("nfsd", "nfsd: master", ROLE_SLEEP, nfsd_syscall, "rpcsvc", 0),
	DEMO_TD("nfsd", "nfsd: service", ROLE_SLEEP, svc_thread_start,
	    "rpcsvc", 0),
	DEMO_TD("nfsd", "nfsd: service", ROLE_SLEEP, svc_thread_start,
	    "rpcsvc", 0),
	DEMO_TD("getty", "getty", ROLE_SWAPPED, getty_syscall, "ttyin", 0),
	DEMO_TD("sshd", "sshd", ROLE_SLEEP, sshd_syscall, "select", 0),
	DEMO_TD("pagezero", "pagezero", ROLE_PREEMPTED, vm_pagezero, NULL, 0),
	DEMO_TD("bufdaemon", "bufdaemon", ROLE_SPIN, buf_daemon, NULL, 0),
};
/* Each dd is a process of its own. */
static const struct demo_td demo_dd =
	DEMO_TD("dd", "dd", ROLE_SPIN, dd_syscall, NULL, 1);
static const struct demo_td demo_user =
	DEMO_TD("md5", "md5", ROLE_USER, fork_return, NULL, 0);

struct demo_world {
	struct sc_machine *m;
	struct sc_proc	*procs[DEMO_MAX_PROCS];
	size_t		nprocs;
	struct demo_td	tds[DEMO_MAX_THREADS];
	size_t		ntds;
	int		errors;		/* threads that did not settle */
};

/* The plan for ncpu CPUs: one thread running per CPU (bufdaemon, md5 and
 * ncpu - 2 dd, at most DEMO_MAX_DD); with one CPU, bufdaemon waits on the
 * run queue. */
static void
demo_plan(struct demo_world *w, int ncpu)
{
	size_t i;
	int ndd = ncpu - 2;

	if (ndd > DEMO_MAX_DD)
		ndd = DEMO_MAX_DD;
	w->ntds = 0;
	for (i = 0; i < sizeof(demo_fixed) / sizeof(demo_fixed[0]); i++)
		w->tds[w->ntds++] = demo_fixed[i];
	for (; ndd > 0; ndd--)
		w->tds[w->ntds++] = demo_dd;
	w->tds[w->ntds++] = demo_user;
}

/* ------------------------------------------------------------------------
 * Bounded waits (sc_deadline)
 * ------------------------------------------------------------------------ */

static bool
demo_asleep(const struct demo_td *d)
{
	const char *wmesg = sc_thread_wmesg(d->td);

	return (atomic_load(&d->arrived) &&
	    sc_thread_state(d->td) == SC_TDS_INHIBITED &&
	    (sc_thread_inhibitors(d->td) & SC_TDI_SLEEPING) != 0 &&
	    wmesg != NULL && strcmp(wmesg, d->wmesg) == 0);
}

/* Has d reached the state of its role (before any swap out)? */
static bool
demo_settled(const struct demo_td *d)
{
	enum sc_td_state state = sc_thread_state(d->td);

	switch (d->role) {
	case ROLE_SLEEP:
	case ROLE_SWAPPED:
		return (demo_asleep(d));
	case ROLE_IWAIT:
		return ((sc_thread_inhibitors(d->td) & SC_TDI_IWAIT) != 0);
	case ROLE_PREEMPTED:
	case ROLE_SPIN:
		return (atomic_load(&d->arrived) &&
		    (state == SC_TDS_RUNNING || state == SC_TDS_RUNQ));
	case ROLE_USER:
		return (atomic_load(&d->arrived) && state == SC_TDS_RUNNING);
	}
	return (false);
}

/* Is d on a run queue? */
static bool
demo_on_runq(const struct demo_td *d)
{
	return (sc_thread_state(d->td) == SC_TDS_RUNQ);
}

/* Wait (bounded) until cond(d) holds; false on timeout. */
static bool
demo_wait_until(const struct demo_td *d, bool (*cond)(const struct demo_td *))
{
	struct sc_deadline dl;

	sc_deadline_start(&dl, DEMO_SETTLE_MS * 1000000ULL);
	while (!cond(d)) {
		if (sc_deadline_passed(&dl))
			return (false);
		usleep(1000);
	}
	return (true);
}

/* ------------------------------------------------------------------------
 * Building and tearing down the machine
 * ------------------------------------------------------------------------ */

/* The process named comm, created on first use (or always: own). */
static struct sc_proc *
demo_proc(struct demo_world *w, const char *comm, bool own)
{
	struct sc_proc *p;
	size_t i;

	for (i = 0; !own && i < w->nprocs; i++)
		if (strcmp(sc_proc_comm(w->procs[i]), comm) == 0)
			return (w->procs[i]);
	if (w->nprocs == DEMO_MAX_PROCS ||
	    sc_proc_create(w->m, comm, &p) != 0)
		return (NULL);
	w->procs[w->nprocs++] = p;
	return (p);
}

/* Create d's thread. */
static int
demo_spawn(struct demo_world *w, struct demo_td *d)
{
	struct sc_proc *p;

	p = demo_proc(w, d->comm, d->own_proc);
	if (p == NULL)
		return (ENOMEM);
	if (d->role == ROLE_IWAIT)
		return (sc_ithread_create(p, d->name, d->fn, d, &d->td));
	return (sc_thread_create(p, d->name, d->fn, d, &d->td));
}

/*
 * Once every thread has settled: the idle-priority one is on the run queue
 * if the better threads that compute keep every CPU (they do up to
 * DEMO_MAX_DD + 2 CPUs); false if it is still running after the bound.
 */
static bool
demo_wait_preempted(const struct demo_world *w, int ncpu)
{
	const struct demo_td *pz = NULL;
	size_t i;
	int nbetter = 0;

	for (i = 0; i < w->ntds; i++) {
		if (w->tds[i].role == ROLE_PREEMPTED)
			pz = &w->tds[i];
		else if (w->tds[i].role == ROLE_SPIN ||
		    w->tds[i].role == ROLE_USER)
			nbetter++;
	}
	return (pz == NULL || pz->td == NULL || nbetter < ncpu ||
	    demo_wait_until(pz, demo_on_runq));
}

/* Create each thread and wait until it has settled, in plan order. */
static int
demo_populate(struct demo_world *w, int ncpu)
{
	struct demo_td *d;
	size_t i;
	int error;

	for (i = 0; i < w->ntds; i++) {
		d = &w->tds[i];
		error = demo_spawn(w, d);
		if (error != 0) {
			w->ntds = i;
			return (error);
		}
		if (!demo_wait_until(d, demo_settled)) {
			fprintf(stderr, "stackcap-demo: thread %d \"%s\" did "
			    "not settle within %d ms\n", sc_thread_tid(d->td),
			    d->name, DEMO_SETTLE_MS);
			w->errors++;
			continue;
		}
		if (d->role == ROLE_SWAPPED &&
		    (error = sc_thread_swapout(d->td)) != 0) {
			fprintf(stderr, "stackcap-demo: swapping out \"%s\": "
			    "%s\n", d->name, strerror(error));
			w->errors++;
		}
	}
	if (!demo_wait_preempted(w, ncpu)) {
		fprintf(stderr, "stackcap-demo: the idle-priority thread was "
		    "not preempted within %d ms\n", DEMO_SETTLE_MS);
		w->errors++;
	}
	return (0);
}

/* Wake d until it has exited (bounded: a wakeup can race with the sleep
 * of a thread that has not settled). */
static void
demo_reap(struct demo_td *d)
{
	struct sc_deadline dl;

	sc_deadline_start(&dl, DEMO_REAP_MS * 1000000ULL);
	while (!sc_thread_exited(d->td) && !sc_deadline_passed(&dl)) {
		sc_wakeup(d);
		usleep(1000);
	}
	if (sc_thread_exited(d->td))
		sc_thread_join(d->td);
	else
		fprintf(stderr, "stackcap-demo: thread %d \"%s\" did not "
		    "exit; the machine's destroy stops it\n",
		    sc_thread_tid(d->td), d->name);
}

/* Stop every thread, let each one return from its function, destroy. */
static void
demo_teardown(struct demo_world *w)
{
	struct demo_td *d;
	size_t i;

	atomic_store(&demo_stop, 1);
	for (i = 0; i < w->ntds; i++) {
		d = &w->tds[i];
		if (d->role == ROLE_SWAPPED)
			(void)sc_thread_swapin(d->td);
		else if (d->role == ROLE_IWAIT)
			(void)sc_ithread_schedule(d->td);
		sc_wakeup(d);
	}
	for (i = 0; i < w->ntds; i++)
		demo_reap(&w->tds[i]);
	sc_machine_destroy(w->m);
	w->m = NULL;
}

/* ------------------------------------------------------------------------
 * Running it
 * ------------------------------------------------------------------------ */

static int
demo_machine(const struct demo_opts *o, struct sc_machine **mp)
{
	struct sc_machine_config cfg;
	int error;

	sc_machine_config_init(&cfg);
	cfg.ncpu = o->ncpu > 0 ? o->ncpu : cfg.ncpu;
	error = sc_machine_create(&cfg, mp);
	if (error != 0)
		fprintf(stderr, "stackcap-demo: sc_machine_create: %s%s%s\n",
		    strerror(error), *sc_machine_config_error() != '\0' ?
		    ": " : "", sc_machine_config_error());
	return (error);
}

int
demo_world_run(const struct demo_opts *o,
    int (*show)(const struct demo_opts *, struct sc_machine *),
    const char *what)
{
	static struct demo_world w;
	int error;

	if (demo_machine(o, &w.m) != 0)
		return (1);
	demo_plan(&w, sc_machine_ncpu(w.m));
	error = demo_populate(&w, sc_machine_ncpu(w.m));
	if (error == 0)
		error = show(o, w.m);
	if (error != 0) {
		fprintf(stderr, "stackcap-demo: %s: %s\n", what,
		    strerror(error));
		w.errors++;
	}
	fflush(stdout);
	demo_teardown(&w);
	return (w.errors != 0);
}
