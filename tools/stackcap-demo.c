/*
 * stackcap-demo: a small simulated machine whose threads sit in the states a
 * busy FreeBSD box shows, printed the way `procstat -kk -a` prints it.
 *
 * The machine has a few processes with FreeBSD-like names: kernel threads
 * asleep in named call chains (syncer, nfsd, sshd), interrupt threads that
 * never ran (empty stack), a sleeping thread whose kernel stack is swapped
 * out (<swapped>), threads running in the kernel on a CPU (bufdaemon, dd:
 * captured by an IPI while they run) and one running in user mode
 * (<running>: the IPI found no kernel frame, EBUSY).  Every thread's stack
 * comes from one sc_machine_snapshot(): the library's kern.proc.kstack for
 * every process, with all the running threads' CPUs interrupted at once.
 *
 * usage: stackcap-demo [--ncpu N] | --scenario NAME [--json FILE] |
 *        --sample N [--ncpu N] | --help
 * (--help lists every scenario of scn_scenarios[], from the table itself:
 * tools/check_help.c checks that none is missing.)
 *
 * main() parses the options into struct demo_opts and runs one mode from
 * demo_modes[]; a new mode (a scenario, sampling) is one more entry there.
 */
#include <errno.h>
#include <getopt.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sample.h"
#include "explore.h"
#include "scenarios.h"
#include "stackcap.h"
#include "stackcap/testing.h"

/* A link of a call chain keeps its frame and its name (SC_NOIPA). */

#define DEMO_MAX_THREADS	64	/* threads of the demo machine */
#define DEMO_MAX_PROCS		32
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

/* fork_return(): the new thread leaves for user mode. */
SC_NOIPA static void
fork_return(void *arg)
{
	sc_user_call(md5_timetrial, arg);
	SC_BARRIER();
}

/*
 * The machine's threads, in creation order (pids and tids follow it).
 * The running ones come last but one, the user-mode one last: with one CPU
 * it never gives the CPU up, so everything before it must have settled.
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
 * Bounded waits
 * ------------------------------------------------------------------------ */

static long
demo_now_ms(void)
{
	return ((long)(sc_now_ns() / 1000000));
}

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
	case ROLE_SPIN:
		return (atomic_load(&d->arrived) &&
		    (state == SC_TDS_RUNNING || state == SC_TDS_RUNQ));
	case ROLE_USER:
		return (atomic_load(&d->arrived) && state == SC_TDS_RUNNING);
	}
	return (false);
}

/* Wait (bounded) until d settles; false on timeout. */
static bool
demo_wait_settled(const struct demo_td *d)
{
	long deadline = demo_now_ms() + DEMO_SETTLE_MS;

	while (!demo_settled(d)) {
		if (demo_now_ms() > deadline)
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

/* Create each thread and wait until it has settled, in plan order. */
static int
demo_populate(struct demo_world *w)
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
		if (!demo_wait_settled(d)) {
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
	return (0);
}

/* Wake d until it has exited (bounded: a wakeup can race with the sleep
 * of a thread that has not settled). */
static void
demo_reap(struct demo_td *d)
{
	long deadline = demo_now_ms() + DEMO_REAP_MS;

	while (!sc_thread_exited(d->td) && demo_now_ms() < deadline) {
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

/* The options (main() parses them). */
struct demo_opts {
	int		ncpu;
	const char	*mode;
	const char	*scenario;	/* --scenario NAME */
	const char	*json;	/* --json FILE: Chrome trace-event JSON */
	int		samples;	/* --sample N */
	int		kflag;		/* -k: 1, -kk: 2 (the default) */
	bool		kernel_limits;	/* --kernel-limits */
	const char	*explore;	/* --explore NAME */
	int		runs;		/* --runs N (default 1000) */
	int		pct;		/* --pct DEPTH (0: random) */
	uint64_t	seed;		/* --seed S (0: search) */
	int		mistake;	/* --mistake on|off (default on) */
};

/* ------------------------------------------------------------------------
 * Printing, the way procstat -kk -a does (usr.bin/procstat/procstat_kstack.c)
 * ------------------------------------------------------------------------ */

/*
 * What kern.proc.kstack hands procstat: stack_sbuf_print()'s text, one
 * "#N 0x... at func+0x1c" line per frame ("??+0" when no symbol covers the
 * pc).  With --kernel-limits, the kernel's limits apply: STACK_MAX (18)
 * frames, and a KKST_MAXLEN (1024) byte buffer that cuts the text (the
 * sysctl's fixed-length sbuf).
 */
#define DEMO_STACK_MAX	18		/* sys/sys/stack.h */
#define DEMO_KKST_MAXLEN 1024		/* sys/sys/user.h */

static void
kstack_text(const struct sc_stack *st, bool limits, char *buf, size_t len)
{
	char name[256];
	uintptr_t off;
	size_t used = 0, cap = limits && len > DEMO_KKST_MAXLEN ?
	    DEMO_KKST_MAXLEN : len;
	int i, depth = st->depth, n;

	if (limits && depth > DEMO_STACK_MAX)
		depth = DEMO_STACK_MAX;
	buf[0] = '\0';
	for (i = 0; i < depth && used + 1 < cap; i++) {
		if (sc_symbolize(st->pcs[i], name, sizeof(name), &off) != 0) {
			snprintf(name, sizeof(name), "??");
			off = 0;
		}
		n = snprintf(buf + used, cap - used, "#%d %p at %s+%#lx\n", i,
		    (void *)st->pcs[i], name, (unsigned long)off);
		if (n < 0)
			break;
		used += (size_t)n < cap - used ? (size_t)n : cap - used - 1;
	}
}

/*
 * procstat_kstack.c's reduction of that text: the words of each line are
 * frame number, pc, "at", function and offset, split at ' ', '\n' and
 * '+'; keep the function (and "+offset" for -kk), a blank after each
 * frame.  A line cut by KKST_MAXLEN comes out cut, as in procstat.
 */
static void
kstack_reduce(const char *text, int kflag, char *out)
{
	enum { W_NUM, W_PC, W_AT, W_FUNC, W_OFF } w = W_NUM;
	const char *c;

	for (c = text; *c != '\0'; c++) {
		if (*c == ' ' || *c == '\n' || *c == '+') {
			if (w == W_FUNC && kflag > 1)
				*out++ = '+';
			if (w == W_OFF)
				*out++ = ' ';
			w = w == W_OFF ? W_NUM : w + 1;
			continue;
		}
		if (w == W_FUNC || (w == W_OFF && kflag > 1))
			*out++ = *c;
	}
	*out = '\0';
}

/*
 * procstat's header: "%5s %6s %-19s %-19s %-29s", and the same widths on
 * each line (usr.bin/procstat/procstat_kstack.c, FreeBSD 12 to main).
 */
static void
kstack_header(void)
{
	printf("%5s %6s %-19s %-19s %-29s\n", "PID", "TID", "COMM", "TDNAME",
	    "KSTACK");
}

static void
kstack_line(const struct demo_opts *o, const struct sc_proc *p,
    const struct sc_kstack *kk)
{
	char text[SC_STACK_MAX * 300], trace[sizeof(text)];
	const char *comm = sc_proc_comm(p);

	/* TDNAME is "-" when empty or the same as the command. */
	printf("%5d %6d %-19s %-19s ", sc_proc_pid(p), kk->tid, comm,
	    kk->tdname[0] != '\0' && strcmp(kk->tdname, comm) != 0 ?
	    kk->tdname : "-");
	switch (kk->state) {
	case SC_KKST_STATE_RUNNING:
		printf("%-29s\n", "<running>");
		return;
	case SC_KKST_STATE_SWAPPED:
		printf("%-29s\n", "<swapped>");
		return;
	case SC_KKST_STATE_STACKOK:
		break;
	default:
		printf("%-29s\n", "<unknown>");
		return;
	}
	kstack_text(&kk->stack, o->kernel_limits, text, sizeof(text));
	kstack_reduce(text, o->kflag, trace);
	printf("%-29s\n", trace);
}

/*
 * procstat -kk -a: every thread of every process of m (the idle process
 * too), by pid then tid, from one sc_machine_snapshot(): every running
 * thread's CPU is interrupted in the same round.
 */
static void
kstack_all(const struct demo_opts *o, struct sc_machine *m)
{
	static struct sc_kstack kk[DEMO_MAX_THREADS];
	struct sc_proc *procs[DEMO_MAX_PROCS + 1];
	size_t i, j, n, np;
	int error;

	sc_machine_procs(m, procs, DEMO_MAX_PROCS + 1, &np);
	if (np > DEMO_MAX_PROCS + 1)
		np = DEMO_MAX_PROCS + 1;
	error = sc_machine_snapshot(m, kk, DEMO_MAX_THREADS, &n);
	if (error == ETIMEDOUT)		/* the rest is listed */
		fprintf(stderr, "stackcap-demo: a proc lock stayed held past "
		    "capture_timeout_ns: its process is left out\n");
	else if (error != 0) {
		fprintf(stderr, "stackcap-demo: sc_machine_snapshot: %s\n",
		    strerror(error));
		return;
	}
	if (n > DEMO_MAX_THREADS)
		n = DEMO_MAX_THREADS;
	kstack_header();
	for (i = 0, j = 0; i < n; i++) {
		/* Both lists are in pid order. */
		while (j < np && sc_proc_pid(procs[j]) != kk[i].pid)
			j++;
		if (j == np)
			break;
		kstack_line(o, procs[j], &kk[i]);
	}
}

/* ------------------------------------------------------------------------
 * Modes and options
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

/*
 * Build the demo machine, hand it to show(), tear it down.  Returns the
 * exit status.
 */
static int
run_world(const struct demo_opts *o, int (*show)(const struct demo_opts *,
    struct sc_machine *), const char *what)
{
	static struct demo_world w;
	int error;

	if (demo_machine(o, &w.m) != 0)
		return (1);
	demo_plan(&w, sc_machine_ncpu(w.m));
	error = demo_populate(&w);
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

static int
show_procstat(const struct demo_opts *o, struct sc_machine *m)
{
	kstack_all(o, m);
	return (0);
}

/* The default mode: populate a machine, print it as procstat -kk -a. */
static int
run_procstat(const struct demo_opts *o)
{
	return (run_world(o, show_procstat, "creating threads"));
}

static int
show_sample(const struct demo_opts *o, struct sc_machine *m)
{
	return (smp_collapsed(m, o->samples, stdout));
}

/* Sampling: populate the machine, write N rounds as collapsed stacks. */
static int
run_sample(const struct demo_opts *o)
{
	return (run_world(o, show_sample, "sampling"));
}

/* Print a scenario's outcome and its narrated trace, before teardown. */
static void
scenario_show(struct sc_machine *m, void *arg)
{
	const struct demo_opts *o = arg;
	FILE *fp;

	printf("\nNarrated trace:\n");
	sc_trace_print(m, stdout);
	if (o->json == NULL)
		return;
	if ((fp = fopen(o->json, "w")) == NULL ||
	    sc_trace_write_json(m, fp) != 0 || fclose(fp) != 0)
		fprintf(stderr, "stackcap-demo: cannot write %s\n", o->json);
	else
		printf("\nChrome trace-event JSON written to %s (open it in "
		    "https://ui.perfetto.dev or chrome://tracing)\n", o->json);
}

static int	run_scenario_seed(const struct demo_opts *o);

/*
 * A race of the protocol, run on demand, with its narrated trace; with
 * --seed, one run of the explorer body of that name instead.
 */
static int
run_scenario(const struct demo_opts *o)
{
	const struct scn_scenario *s = scn_find(o->scenario);
	struct scn_result res;
	char buf[2048];
	int error;

	if (o->seed != 0)
		return (run_scenario_seed(o));
	if (s == NULL) {
		fprintf(stderr, "stackcap-demo: no scenario \"%s\" (see "
		    "--help)\n", o->scenario);
		return (2);
	}
	printf("Scenario %s: %s\n", s->name, s->summary);
	printf("(%d simulated CPU%s, %s scheduler, %s protocol, bounded wait "
	    "%ld ms)\n", s->ncpu, s->ncpu > 1 ? "s" : "",
	    s->sched == SCN_SCHED_4BSD ? "4BSD" : s->sched == SCN_SCHED_ULE ?
	    "ULE" : "the default", s->protocol == SC_PROTO_NMI ?
	    "FreeBSD 12's NMI" : "the IPI", s->timeout_ns / 1000000);
	error = scn_run(s, 4096, scenario_show, (void *)o, &res);
	sc_stack_format_kk(&res.stack, buf, sizeof(buf));
	printf("\nsc_stack_save_td(td %d) returned %s; stack: %s\n",
	    res.target_tid, sc_errname(res.error), res.stack.depth > 0 ? buf :
	    "(empty)");
	if (res.answer_tid != 0 && res.answer_tid != res.target_tid)
		printf("the pointer asked for names td %d now: td %d exited "
		    "and its struct was reused (%lu reused); the stack is td "
		    "%d's, not td %d's\n", res.answer_tid, res.target_tid,
		    (unsigned long)res.cnt.thread_reuses, res.answer_tid,
		    res.target_tid);
	printf("counters: ipis sent %lu, deferred %lu, answered %lu, stale "
	    "%lu; retries nocpu %lu, idle %lu, other %lu; timeouts %lu\n",
	    (unsigned long)res.cnt.ipis_sent,
	    (unsigned long)res.cnt.ipis_deferred,
	    (unsigned long)res.cnt.trace_answered,
	    (unsigned long)res.cnt.trace_stale,
	    (unsigned long)res.cnt.retry_nocpu,
	    (unsigned long)res.cnt.retry_idle,
	    (unsigned long)res.cnt.retry_other,
	    (unsigned long)res.cnt.timeouts);
	if (s->protocol == SC_PROTO_NMI)
		printf("NMI protocol: nmis sent %lu, answered %lu, EAGAIN %lu; "
		    "a second capture returned %s\n",
		    (unsigned long)res.cnt.nmis_sent,
		    (unsigned long)res.cnt.nmis_answered,
		    (unsigned long)res.cnt.nmi_eagain, sc_errname(res.error2));
	if (res.panic[0] != '\0')
		printf("KASSERT: %s\n", res.panic);
	return (error != 0);
}

/*
 * One run of an explorer body, narrated (and --json), with its outcome
 * and the command that replays it.  Returns the exit status: 0 when the
 * run gave what the caller expected (`expect`, an enum exp_outcome; -1:
 * anything), else 1.
 */
static int
explore_replay(const struct demo_opts *o, const struct exp_body *b,
    uint64_t seed, bool mistaken, int expect)
{
	char why[1024], cmd[256];
	int error, outcome;

	error = exp_run(b, seed, o->pct, mistaken, 1 << 16, scenario_show,
	    (void *)o, &outcome, why, sizeof(why));
	if (error != 0) {
		fprintf(stderr, "stackcap-demo: %s%s%s\n", sc_errname(error),
		    why[0] != '\0' ? ": " : "", why);
		return (1);
	}
	printf("\n%s\n", outcome == EXP_BROKEN ? "The invariant broke:" :
	    outcome == EXP_REACHED ? "The window was reached; the invariant "
	    "held:" : "The invariant held.");
	if (why[0] != '\0')
		printf("%s\n", why);
	exp_replay_cmd(b, seed, o->pct, mistaken, cmd, sizeof(cmd));
	printf("replay: %s\n", cmd);
	return (expect >= 0 && outcome != expect);
}

/* "(random, its mistake on, ULE; deterministic mode)" and the like. */
static void
explore_say_how(const struct demo_opts *o, const struct exp_body *b,
    bool mistaken)
{
	printf("(%s, ", o->pct > 0 ? "PCT" : "a random scheduler");
	if (exp_has_mistake(b))
		printf("%s %s, ", b->mistake.what, mistaken ? "on" : "off");
	else
		printf("the final protocol, ");
	printf("%s; deterministic mode)\n", exp_sched() == SC_SCHED_4BSD ?
	    "4BSD" : "ULE");
	if ((b->scheds & EXP_SCHED(exp_sched())) == 0)
		printf("(under this scheduler nothing is to be found: every "
		    "run holds)\n");
}

/* --scenario NAME --seed S: one run of an explorer body. */
static int
run_scenario_seed(const struct demo_opts *o)
{
	const struct exp_body *b = exp_find(o->scenario);

	if (b == NULL) {
		fprintf(stderr, "stackcap-demo: --seed replays an explorer "
		    "body, and \"%s\" is none (see --help)\n", o->scenario);
		return (2);
	}
	exp_own_seed("stackcap-demo");
	printf("Scenario %s, seed %ju, without hooks: %s\n", b->name,
	    (uintmax_t)o->seed, b->summary);
	explore_say_how(o, b, o->mistake != 0);
	return (explore_replay(o, b, o->seed, o->mistake != 0, -1));
}

/*
 * A scenario of the history without its hook: seeds until one breaks its
 * invariant or reaches its window (or --seed S: that one), then that run
 * with its trace.
 */
static int
run_explore(const struct demo_opts *o)
{
	const struct exp_body *b = exp_find(o->explore);
	struct exp_found f;
	bool mistaken = o->mistake != 0;
	int error, runs = o->runs > 0 ? o->runs : 1000;

	if (b == NULL) {
		fprintf(stderr, "stackcap-demo: no explorable scenario \"%s\" "
		    "(see --help)\n", o->explore);
		return (2);
	}
	exp_own_seed("stackcap-demo");
	printf("Exploring %s: %s\n", b->name, b->summary);
	explore_say_how(o, b, mistaken);
	if (o->seed != 0)
		return (explore_replay(o, b, o->seed, mistaken, -1));
	error = exp_search(b, 1, runs, o->pct, mistaken,
	    EXP_MASK(b->goal) | EXP_MASK(EXP_BROKEN), &f);
	if (error != 0) {
		fprintf(stderr, "stackcap-demo: %s\n", sc_errname(error));
		return (1);
	}
	if (f.seed == 0) {
		printf("no seed of %d %s\n", f.nrun, b->goal == EXP_REACHED ?
		    "reached the window" : "broke the invariant");
		return (1);
	}
	printf("seed %ju %s, at run %d\n", (uintmax_t)f.seed,
	    f.outcome == EXP_REACHED ? "reached the window" :
	    "broke the invariant", f.nrun);
	return (explore_replay(o, b, f.seed, mistaken, f.outcome));
}

struct demo_mode {
	const char	*name;
	int		(*run)(const struct demo_opts *);
};

static const struct demo_mode demo_modes[] = {
	{ "procstat", run_procstat },
	{ "scenario", run_scenario },
	{ "sample", run_sample },
	{ "explore", run_explore },
};

static void
usage(FILE *fp, const char *prog)
{
	size_t i;

	fprintf(fp,
	    "usage: %s [-k | -kk] [--kernel-limits] [--ncpu N]\n"
	    "                                     procstat -kk -a view\n"
	    "       %s --scenario NAME [--json FILE]  one race, narrated\n"
	    "       %s --scenario NAME --seed S [--pct DEPTH]\n"
	    "           [--mistake on|off] [--json FILE]\n"
	    "                                     one explored run, replayed\n"
	    "       %s --sample N [--ncpu N]      collapsed stacks\n"
	    "       %s --explore NAME [--runs N] [--pct DEPTH] [--seed S]\n"
	    "           [--mistake on|off]        search seeds for a mistake\n"
	    "\n"
	    "Builds a simulated machine with threads asleep in named call\n"
	    "chains, interrupt threads that never ran, a swapped-out thread,\n"
	    "threads running in the kernel and one running in user mode, then\n"
	    "prints every thread's kernel stack the way `procstat -kk -a`\n"
	    "does (<swapped>, <running> for a capture that found no kernel\n"
	    "frame).\n"
	    "\n"
	    "  -k, -kk          function names, or names and offsets (the\n"
	    "                   default), as procstat -k and -kk\n"
	    "  --kernel-limits  the kernel's limits: 18 frames (STACK_MAX),\n"
	    "                   1024 bytes of trace (KKST_MAXLEN)\n"
	    "  --ncpu N         simulated CPUs (1..256, default 2)\n"
	    "  --scenario NAME  run one race of the capture protocol on\n"
	    "                   demand and print its narrated trace (below)\n"
	    "  --json FILE      with --scenario or --explore: also write the\n"
	    "                   trace as Chrome trace-event JSON (Perfetto,\n"
	    "                   chrome://tracing)\n"
	    "  --sample N       capture every thread N times and print the\n"
	    "                   stacks collapsed\n"
	    "                   (\"comm;root;...;leaf count\"),\n"
	    "                   for flamegraph.pl, speedscope or inferno\n"
	    "  --explore NAME   run a scenario of the history without its\n"
	    "                   hook, its mistake on, in deterministic mode\n"
	    "                   over seeds 1..N until its invariant breaks\n"
	    "                   (or, with no mistake, a run reaches its\n"
	    "                   window); print that run's narrated trace and\n"
	    "                   the command that replays it (below)\n"
	    "  --runs N         with --explore: at most N seeds (default\n"
	    "                   1000)\n"
	    "  --pct DEPTH      with --explore or --seed: PCT (Burckhardt et\n"
	    "                   al., 2010) with DEPTH - 1 change points, not\n"
	    "                   a random scheduler\n"
	    "  --seed S         with --scenario or --explore: one run of the\n"
	    "                   explorer body NAME under seed S, narrated (a\n"
	    "                   replay: the same run as the search's)\n"
	    "  --mistake on|off with --explore or --seed: the body's mistake\n"
	    "                   (default on); off is the final protocol\n"
	    "  --help           this text\n"
	    "\n"
	    "The scheduler is ULE, or 4BSD with STACKCAP_SCHED=4bsd in the\n"
	    "environment (a replay command says which).  --scenario NAME\n"
	    "alone runs the hooked scenario; with --seed S, the explorer's\n"
	    "body of that name, without hooks, as the search ran it.\n"
	    "--explore and --seed ignore STACKCAP_SEED (and say so): the\n"
	    "explorer gives each run its seed.\n"
	    "\n"
	    "Scenarios:\n", prog, prog, prog, prog, prog);
	for (i = 0; i < scn_nscenarios; i++)
		fprintf(fp, "  %-20s %s\n", scn_scenarios[i].name,
		    scn_scenarios[i].summary);
	fprintf(fp, "\nExplorable (--explore; --scenario NAME --seed S):\n");
	for (i = 0; i < exp_nbodies; i++)
		fprintf(fp, "  %-20s %s\n", exp_bodies[i].name,
		    exp_bodies[i].summary);
}

/* Returns -1 to go on, or the exit status. */
static int
parse_args(int argc, char **argv, struct demo_opts *o)
{
	static const struct option longopts[] = {
		{ "ncpu", required_argument, NULL, 'n' },
		{ "scenario", required_argument, NULL, 's' },
		{ "json", required_argument, NULL, 'j' },
		{ "sample", required_argument, NULL, 'S' },
		{ "kernel-limits", no_argument, NULL, 'L' },
		{ "explore", required_argument, NULL, 'E' },
		{ "runs", required_argument, NULL, 'R' },
		{ "pct", required_argument, NULL, 'P' },
		{ "seed", required_argument, NULL, 'D' },
		{ "mistake", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char *end;
	long v;
	int c;

	memset(o, 0, sizeof(*o));
	o->mode = "procstat";
	o->mistake = -1;
	while ((c = getopt_long(argc, argv, "kn:s:j:S:h", longopts, NULL)) !=
	    -1) {
		switch (c) {
		case 'k':
			o->kflag++;
			break;
		case 'L':
			o->kernel_limits = true;
			break;
		case 's':
			o->mode = "scenario";
			o->scenario = optarg;
			break;
		case 'j':
			o->json = optarg;
			break;
		case 'E':
			o->mode = "explore";
			o->explore = optarg;
			break;
		case 'R':
		case 'P':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || v < 1 ||
			    v > (c == 'R' ? 10000000 : 64)) {
				fprintf(stderr, "%s: --%s: expected 1..%d, got "
				    "\"%s\"\n", argv[0], c == 'R' ? "runs" :
				    "pct", c == 'R' ? 10000000 : 64, optarg);
				return (2);
			}
			if (c == 'R')
				o->runs = (int)v;
			else
				o->pct = (int)v;
			break;
		case 'D':
			errno = 0;
			o->seed = strtoull(optarg, &end, 0);
			if (errno != 0 || *end != '\0' || o->seed == 0) {
				fprintf(stderr, "%s: --seed: expected a "
				    "number other than 0, got \"%s\"\n",
				    argv[0], optarg);
				return (2);
			}
			break;
		case 'M':
			if (strcmp(optarg, "on") != 0 &&
			    strcmp(optarg, "off") != 0) {
				fprintf(stderr, "%s: --mistake: expected on or "
				    "off, got \"%s\"\n", argv[0], optarg);
				return (2);
			}
			o->mistake = strcmp(optarg, "on") == 0;
			break;
		case 'S':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || v < 1 ||
			    v > 1000000) {
				fprintf(stderr, "%s: --sample: expected "
				    "1..1000000, got \"%s\"\n", argv[0],
				    optarg);
				return (2);
			}
			o->mode = "sample";
			o->samples = (int)v;
			break;
		case 'n':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || v < 1 || v > 256) {
				fprintf(stderr, "%s: --ncpu: expected 1..256, "
				    "got \"%s\"\n", argv[0], optarg);
				return (2);
			}
			o->ncpu = (int)v;
			break;
		case 'h':
			usage(stdout, argv[0]);
			return (0);
		default:
			usage(stderr, argv[0]);
			return (2);
		}
	}
	if (o->kflag == 0)
		o->kflag = 2;
	/* --seed, --pct and --mistake go with --explore, or with
	 * --scenario NAME --seed S (an explored run replayed); --runs only
	 * with --explore. */
	if (optind != argc || o->kflag > 2 ||
	    (o->json != NULL && o->scenario == NULL && o->explore == NULL) ||
	    (o->scenario != NULL && (o->samples != 0 || o->explore != NULL)) ||
	    (o->runs != 0 && o->explore == NULL) ||
	    ((o->pct != 0 || o->mistake >= 0) && o->explore == NULL &&
	    (o->scenario == NULL || o->seed == 0)) ||
	    (o->seed != 0 && o->explore == NULL && o->scenario == NULL)) {
		usage(stderr, argv[0]);
		return (2);
	}
	if (o->mistake < 0)
		o->mistake = 1;
	return (-1);
}

int
main(int argc, char **argv)
{
	struct demo_opts o;
	size_t i;
	int status;

	if ((status = parse_args(argc, argv, &o)) >= 0)
		return (status);
	for (i = 0; i < sizeof(demo_modes) / sizeof(demo_modes[0]); i++)
		if (strcmp(demo_modes[i].name, o.mode) == 0)
			return (demo_modes[i].run(&o));
	fprintf(stderr, "%s: unknown mode \"%s\"\n", argv[0], o.mode);
	return (2);
}
