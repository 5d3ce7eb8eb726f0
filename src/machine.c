/*
 * The machine: configuration, creation, the CPU pthreads, stop and
 * destroy, counters, and the machine's lists.
 *
 * Kernel counterparts: none as a whole (a kernel boots once).  The CPU
 * pthread's start mirrors init_secondary() in sys/x86/x86/mp_x86.c (an AP
 * starts its idle thread through sched_throw()); the stop at destroy,
 * cpustop_handler() and stop_cpus() (sys/kern/subr_smp.c).
 *
 * Each CPU is a pthread.  It starts on its own stack (the "boot" context),
 * switches to its idle thread and from then on runs simulated threads on
 * their kernel stacks; it switches back to the boot context only to leave
 * the machine at sc_machine_destroy().
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sc_internal.h"
#include "check_var.h"
#include "sc_futex.h"
#include "sc_sanitizer.h"

#define SC_FIRST_TID	100000
#define SC_IDLE_PID	11
#define SC_FIRST_PID	100

int
sc_machine_ncpu(const struct sc_machine *m)
{
	return (m->m_ncpu);
}

struct sc_thread *
sc_machine_idlethread(struct sc_machine *m, int cpu)
{
	if (cpu < 0 || cpu >= m->m_ncpu)
		return (NULL);
	return (m->m_pcpu[cpu].pc_idlethread);
}

void
sc_machine_counters_sz(struct sc_machine *m, struct sc_counters *c,
    size_t size)
{
	const uint64_t *src = (const uint64_t *)&m->m_cnt;
	uint64_t *dst = (uint64_t *)c;
	size_t i;

	/* Only what the caller has: an older one has fewer counters. */
	if (size > sizeof(*c))
		size = sizeof(*c);
	for (i = 0; i < size / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

void
sc_machine_counters(struct sc_machine *m, struct sc_counters *c)
{
	sc_machine_counters_sz(m, c, SC__COUNTERS_SIZE_V0);
}

void
sc_machine_procs(struct sc_machine *m, struct sc_proc **out, size_t max,
    size_t *n)
{
	struct sc_proc *p;
	size_t i = 0;

	sc__host_lock(&m->m_list_mtx);
	for (p = m->m_procs; p != NULL; p = p->p_next, i++)
		if (i < max)
			out[i] = p;
	sc__host_unlock(&m->m_list_mtx);
	*n = i;
}

/* ------------------------------------------------------------------------
 * Leaving the machine
 * ------------------------------------------------------------------------ */

/*
 * Leave the machine: give up every spin lock, switch to the CPU's boot
 * context, never come back.  Interrupts stay off: no IPI may run on the
 * abandoned thread.  td is the thread running here.
 */
__attribute__((noreturn)) void
sc__cpu_leave(struct sc_pcpu *pc, struct sc_thread *td)
{
	static _Atomic(struct sc_spin *) nolock;
	struct sc_range boot;

	sc__spin_release_all(pc);
	atomic_store(&pc->pc_spinlock_count, 1);
	boot.lo = (uintptr_t)pc->pc_boot_stack;
	boot.hi = boot.lo + pc->pc_boot_stack_len;
	sc__san_fiber_switch(NULL, boot, pc->pc_boot_tsan_fiber);
	sc__cpu_switch(&td->td_pcb, &pc->pc_boot_pcb, &nolock, NULL, NULL);
	__builtin_unreachable();
}

/* Entered from the IPI_STOP handler, which redirected the thread here. */
__attribute__((noreturn, used)) void
sc__cpu_stop(struct sc_pcpu *pc)
{
	atomic_store(&pc->pc_spinlock_count, 1);
	sc__cpu_leave(pc, atomic_load(&pc->pc_curthread));
}

/* ------------------------------------------------------------------------
 * CPUs, create, destroy
 * ------------------------------------------------------------------------ */

/* A CPU pthread booted, failed or stopped: wake whoever waits for that. */
static void
sc_cpu_event(struct sc_machine *m)
{
	atomic_fetch_add(&m->m_cpu_seq, 1);
	sc__futex_wake(&m->m_cpu_seq, INT32_MAX);
}

/*
 * Wait for the next CPU event after seq (read before the caller looked at
 * the CPUs, so that no event is lost), at most 1 ms: a bound, not a poll.
 */
static void
sc_cpu_event_wait(struct sc_machine *m, uint32_t seq)
{
	(void)sc__futex_wait_raw(&m->m_cpu_seq, seq, 1000 * 1000L);
}

static void *
sc_cpu_main(void *arg)
{
	static _Atomic(struct sc_spin *) nolock;
	struct sc_pcpu *pc = arg;
	struct sc_machine *m = pc->pc_machine;
	struct sc_thread *idle = pc->pc_idlethread;
	struct sc_range boot;
	int error;

	sc__pcpu_set(pc);
	/* Deterministic mode: boot only once given the run token. */
	sc__ds_cpu_attach(pc);
	sc__ds_point();
	boot = sc__pthread_stack();
	pc->pc_boot_stack = (const void *)boot.lo;
	pc->pc_boot_stack_len = boot.hi - boot.lo;
	pc->pc_boot_tsan_fiber = sc__san_tsan_current_fiber();
	if ((error = sc__ipi_cpu_init(pc)) != 0) {
		/* No signal stack: sc_machine_create() reports the error. */
		atomic_store(&pc->pc_init_error, error);
		atomic_store(&pc->pc_stopped, 1);
		sc_cpu_event(m);
		return (NULL);
	}

	/* The idle thread starts in fork_exit() holding the lock that its
	 * scheduler hands a running thread (sched_throw()). */
	atomic_store(&pc->pc_curthread, idle);
	m->m_sched->sched_throw(pc);
	sc__td_set_state(idle, SC_TDS_RUNNING);
	atomic_store(&idle->td_oncpu, pc->pc_cpuid);
	atomic_store(&idle->td_lastcpu, pc->pc_cpuid);
	atomic_store(&pc->pc_ktid, (pid_t)syscall(SYS_gettid));
	sc_cpu_event(m);
	sc__san_fiber_switch(&pc->pc_boot_asan_fake, idle->td_kstack,
	    idle->td_tsan_fiber);
	sc__cpu_switch(&pc->pc_boot_pcb, &idle->td_pcb, &nolock, NULL,
	    NULL);

	/* sc__cpu_leave() switched back: the machine is being destroyed. */
	sc__san_finish_switch(pc->pc_boot_asan_fake);
	sc__ipi_cpu_fini(pc);
	atomic_store(&pc->pc_stopped, 1);
	sc_cpu_event(m);
	return (NULL);
}

static void	sc_machine_free(struct sc_machine *m);

/*
 * The seed that STACKCAP_SEED holds: a plain decimal number or a 0x (0X)
 * hex number below 2^64, nothing before or after it.  strtoull() alone
 * takes more ("-1" as 2^64 - 1, " 7", "+7", "010" as octal 8), so the
 * digits are checked first, and its ERANGE catches an overflow.  False
 * when the variable is unset or empty, or holds anything else: that is
 * said once on stderr, and ignored (docs/determinism.md).  Context: any
 * thread.
 */
bool
sc__env_seed(uint64_t *seedp)
{
	static _Atomic int warned;
	const char *v = getenv("STACKCAP_SEED");
	const char *digits;
	unsigned long long seed;
	int serrno = errno;	/* the library never changes the caller's */
	bool bad, hex;

	if (v == NULL || *v == '\0')
		return (false);
	hex = v[0] == '0' && (v[1] == 'x' || v[1] == 'X');
	digits = hex ? v + 2 : v;
	errno = 0;
	seed = strtoull(digits, NULL, hex ? 16 : 10);
	bad = *digits == '\0' || strspn(digits, hex ?
	    "0123456789abcdefABCDEF" : "0123456789") != strlen(digits) ||
	    errno != 0;
	if (bad && atomic_exchange(&warned, 1) == 0)
		fprintf(stderr, "stackcap: STACKCAP_SEED=%s is not a seed (a "
		    "decimal or 0x number below 2^64); ignored\n", v);
	errno = serrno;
	if (bad)
		return (false);
	*seedp = (uint64_t)seed;
	return (true);
}

static void
sc_machine_config_defaults(struct sc_machine_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->sched = sc__sched_default();
	cfg->ncpu = 2;
	cfg->kstack_pages = 4;
	cfg->ipi_signo = SIGRTMIN + 2;
	cfg->capture_timeout_ns = 1000L * 1000 * 1000;
	cfg->wait_strategy = SC_WAIT_SPIN_SLEEP;
	cfg->wait_spin_ns = 5 * 1000;
	cfg->hz = 1000;		/* FreeBSD's */
}

void
sc_machine_config_init_sz(struct sc_machine_config *cfg, size_t size)
{
	struct sc_machine_config def;

	/* Write only what the caller has. */
	sc_machine_config_defaults(&def);
	memcpy(cfg, &def, size < sizeof(def) ? size : sizeof(def));
}

void
sc_machine_config_init(struct sc_machine_config *cfg)
{
	sc_machine_config_init_sz(cfg, SC__CONFIG_SIZE_V0);
}

int
sc_machine_create(const struct sc_machine_config *cfg, struct sc_machine **mp)
{
	return (sc_machine_create_sz(cfg, SC__CONFIG_SIZE_V0, mp));
}

/* Why the calling pthread's last sc_machine_create() failed, or "". */
static _Thread_local const char *sc_create_why = "";

const char *
sc_machine_config_error(void)
{
	return (sc_create_why);
}

/*
 * The reason cfg is refused (EINVAL), or NULL.  cfg is complete: the
 * defaults of the fields an older caller lacks, hold_lock_across_ipi
 * folded into mistakes, STACKCAP_SEED applied.  Settings that the others
 * make meaningless are refused rather than ignored, so that no field of a
 * config silently does nothing.
 */
static const char *
sc_config_check(const struct sc_machine_config *cfg)
{
	const unsigned known = SC_MISTAKE_STALE_ANSWER |
	    SC_MISTAKE_NO_PROC_LOCK | SC_MISTAKE_SPIN_HELD |
	    SC_MISTAKE_HOLD_THREAD_LOCK | SC_MISTAKE_CLEAR_AFTER_IPI |
	    SC_MISTAKE_ANSWER_TARGET | SC_MISTAKE_NOCPU_OFFCPU;
	/* The mistakes of the IPI protocol's own steps (its answer word,
	 * its handler, its NOCPU wait, its dropped thread lock). */
	const unsigned ipi_only = SC_MISTAKE_STALE_ANSWER |
	    SC_MISTAKE_HOLD_THREAD_LOCK | SC_MISTAKE_CLEAR_AFTER_IPI |
	    SC_MISTAKE_ANSWER_TARGET | SC_MISTAKE_NOCPU_OFFCPU;

	/* Each field alone. */
	if (cfg->ncpu < 1 || cfg->ncpu > SC_MAXCPU)
		return ("ncpu is not in 1..256");
	if (cfg->kstack_pages < 1 || cfg->kstack_pages > 1024)
		return ("kstack_pages is not in 1..1024");
	if (!sc__ipi_signo_ok(cfg->ipi_signo))
		return ("ipi_signo is no signal, or one that cannot be caught "
		    "(SIGKILL, SIGSTOP) or a synchronous fault signal "
		    "(SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS)");
	if (cfg->capture_timeout_ns < 0)
		return ("capture_timeout_ns is negative");
	if (cfg->wait_strategy < SC_WAIT_SPIN_SLEEP ||
	    cfg->wait_strategy > SC_WAIT_SLEEP)
		return ("wait_strategy is not an enum sc_wait_strategy");
	if (cfg->wait_spin_ns < 0)
		return ("wait_spin_ns is negative");
	if (cfg->trace_events > SC_TRACE_MAX_EVENTS)
		return ("trace_events is more than 2^24");
	if ((cfg->mistakes & ~known) != 0)
		return ("mistakes has a bit that is no SC_MISTAKE_*");
	if (cfg->arch != SC_ARCH_AMD64 && cfg->arch != SC_ARCH_ARM64)
		return ("arch is neither SC_ARCH_AMD64 nor SC_ARCH_ARM64");
	if (cfg->sched != SC_SCHED_ULE && cfg->sched != SC_SCHED_4BSD)
		return ("sched is neither SC_SCHED_ULE nor SC_SCHED_4BSD");
	if (cfg->protocol != SC_PROTO_IPI && cfg->protocol != SC_PROTO_NMI)
		return ("protocol is neither SC_PROTO_IPI nor SC_PROTO_NMI");
	if (cfg->sim_pct_depth < 0 || cfg->sim_pct_depth > 64)
		return ("sim_pct_depth is not in 0..64");
	if (cfg->capture_serial != 0 && cfg->capture_serial != 1)
		return ("capture_serial is neither 0 nor 1");
	if (cfg->hz < 0 || cfg->hz > SC_HZ_MAX)
		return ("hz is not in 0..10000 (SC_HZ_MAX: the host's timers "
		    "deliver every tick to each CPU up to that rate)");

	/* The deadlocks that only the bounded wait ends. */
	if (cfg->protocol == SC_PROTO_NMI && cfg->capture_timeout_ns == 0)
		return ("SC_PROTO_NMI with capture_timeout_ns 0: FreeBSD 12's "
		    "wait never ends when no NMI answers, the simulation's "
		    "must");
	if ((cfg->mistakes & (SC_MISTAKE_SPIN_HELD |
	    SC_MISTAKE_HOLD_THREAD_LOCK)) != 0 && cfg->capture_timeout_ns == 0)
		return ("SC_MISTAKE_SPIN_HELD or SC_MISTAKE_HOLD_THREAD_LOCK "
		    "(hold_lock_across_ipi) with capture_timeout_ns 0: only "
		    "the bounded wait ends their deadlock");
	if ((cfg->mistakes & SC_MISTAKE_CLEAR_AFTER_IPI) != 0 &&
	    cfg->capture_timeout_ns == 0)
		return ("SC_MISTAKE_CLEAR_AFTER_IPI with capture_timeout_ns 0: "
		    "only the bounded wait ends the wait for a wiped answer");

	/* Settings that another makes meaningless. */
	if (cfg->arch == SC_ARCH_ARM64 && (cfg->protocol != SC_PROTO_IPI ||
	    cfg->mistakes != 0 || cfg->capture_serial != 0))
		return ("SC_ARCH_ARM64 with SC_PROTO_NMI, a mistake "
		    "(hold_lock_across_ipi too) or capture_serial: arm64 "
		    "captures no running thread (EOPNOTSUPP), so no protocol, "
		    "lock or mistake of that capture ever comes into play");
	if (cfg->protocol == SC_PROTO_NMI && cfg->capture_serial != 0)
		return ("SC_PROTO_NMI with capture_serial: capture_serial "
		    "chooses between the IPI protocol's intr_lock and its "
		    "per-CPU slots; FreeBSD 12's NMI protocol has one nmi_lock "
		    "of its own, always");
	if (cfg->protocol == SC_PROTO_NMI && (cfg->mistakes & ipi_only) != 0)
		return ("SC_PROTO_NMI with SC_MISTAKE_STALE_ANSWER, "
		    "SC_MISTAKE_HOLD_THREAD_LOCK (hold_lock_across_ipi), "
		    "SC_MISTAKE_CLEAR_AFTER_IPI, SC_MISTAKE_ANSWER_TARGET or "
		    "SC_MISTAKE_NOCPU_OFFCPU: those are mistakes of the IPI "
		    "protocol (its answer word, its handler's answer, its "
		    "NOCPU wait, its dropped thread lock); the NMI protocol "
		    "opens each request with nmi_pending = td, which the "
		    "handler's clear answers, holds the thread lock by design "
		    "and asserts that td_oncpu is not NOCPU");
	if (cfg->sim_pct_depth != 0 && cfg->seed == 0)
		return ("sim_pct_depth without a seed: PCT chooses among the "
		    "actors of a deterministic machine (cfg.seed or "
		    "STACKCAP_SEED not 0), seed 0 is real concurrency");
	return (NULL);
}

int
sc_machine_create_sz(const struct sc_machine_config *ucfg, size_t size,
    struct sc_machine **mp)
{
	struct sc_machine_config full, *cfg = &full;
	struct sc_machine *m;
	struct sc_pcpu *pc;
	struct sc_chk *chk;
	const char *why;
	char name[32];
	uint64_t deadline;
	uint32_t seq;
	int error, i, started;

	sc_create_why = "";
	if (mp != NULL)
		*mp = NULL;
	if (ucfg == NULL || mp == NULL) {
		sc_create_why = "a NULL argument";
		return (EINVAL);
	}
	if (size < SC__CONFIG_SIZE_V0) {
		sc_create_why = "the config's size is smaller than stackcap "
		    "0.1's struct";
		return (EINVAL);
	}
	/* Read only what the caller has; the fields it lacks: defaults. */
	sc_machine_config_defaults(&full);
	memcpy(&full, ucfg, size < sizeof(full) ? size : sizeof(full));
	if (cfg->hold_lock_across_ipi)
		cfg->mistakes |= SC_MISTAKE_HOLD_THREAD_LOCK;
	/* STACKCAP_SEED replaces cfg.seed: any test replays in
	 * deterministic mode without a rebuild.  Not under sc_check(),
	 * which gives each run its own: there a machine of seed 0 (a
	 * test's own fixture, made with sc_machine_config_init()) takes the
	 * run's seed, PCT depth and scheduler, so that an existing test runs
	 * under the check unchanged (tests/test_check_suite.c). */
	if ((chk = atomic_load(&sc__chk_cur)) == NULL)
		(void)sc__env_seed(&cfg->seed);
	else if (cfg->seed == 0) {
		cfg->seed = chk->c_cfg->seed;
		cfg->sim_pct_depth = chk->c_cfg->sim_pct_depth;
		cfg->sched = chk->c_cfg->sched;
	}
	if ((why = sc_config_check(cfg)) != NULL) {
		sc_create_why = why;
		return (EINVAL);
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return (ENOMEM);
	m->m_cfg = *cfg;
	sc__sleepq_machine(m, 1);
	m->m_ncpu = cfg->ncpu;
	m->m_pid = getpid();
	/* Sanitizers need deeper stacks (FreeBSD adds KSTACK pages too). */
	m->m_kstack_len = (size_t)cfg->kstack_pages * SC_PAGE_SIZE *
	    SC_SAN_STACK_SCALE;
	m->m_sched = sc__sched_select(cfg->sched);
	sc__spin_init(&m->m_sched_lock, "sched lock");
	sc__spin_init(&m->m_nmi.sn_lock, "nmi lock");
	sc__runq_init(&m->m_runq);
	TAILQ_INIT(&m->m_thread_free);
	(void)pthread_mutex_init(&m->m_list_mtx, NULL); /* default: no fail */
	m->m_procs_tail = &m->m_procs;
	m->m_nextpid = SC_IDLE_PID;
	m->m_nexttid = SC_FIRST_TID;
	sc__mtx_init(&m->m_intr_lock, "intr_lock", NULL);
	if (cfg->hook != NULL)
		sc_machine_set_hook(m, cfg->hook, cfg->hook_arg);
	if ((error = sc__trace_init(m, cfg->trace_events)) != 0) {
		sc_machine_free(m);
		return (error);
	}
	m->m_pcpu = aligned_alloc(64, sizeof(*m->m_pcpu) * (size_t)m->m_ncpu);
	if (m->m_pcpu == NULL) {
		sc_machine_free(m);
		return (ENOMEM);
	}
	memset(m->m_pcpu, 0, sizeof(*m->m_pcpu) * (size_t)m->m_ncpu);
	error = sc_proc_create(m, "idle", &m->m_idleproc);
	m->m_nextpid = SC_FIRST_PID;
	for (i = 0; error == 0 && i < m->m_ncpu; i++) {
		pc = &m->m_pcpu[i];
		pc->pc_machine = m;
		pc->pc_cpuid = i;
		sc__runq_init(&pc->pc_runq);
		sc__spin_init(&pc->pc_tdq_lock, "tdq lock");
		sc__mtx_init(&pc->pc_intr.si_mtx, "capture slot", NULL);
		snprintf(name, sizeof(name), "idle: cpu%d", i);
		error = sc__thread_alloc(m->m_idleproc, name, sc__idle_loop,
		    NULL, true, &pc->pc_idlethread);
	}
	if (error == 0) {
		error = sc__ipi_init(m);
		if (error == EBUSY)
			sc_create_why = "ipi_signo has a handler that is not "
			    "stackcap's";
		else if (error == EINVAL)
			sc_create_why = "ipi_signo: sigaction() refused it";
	}
	if (error == 0)
		error = sc__ds_init(m);
	if (error != 0) {
		sc_machine_free(m);
		return (error);
	}
	for (started = 0; started < m->m_ncpu; started++) {
		error = pthread_create(&m->m_pcpu[started].pc_pthread, NULL,
		    sc_cpu_main, &m->m_pcpu[started]);
		if (error != 0)
			break;
	}
	/*
	 * Wait until every CPU runs its idle thread (bounded: 10 s).  A CPU
	 * that boots wakes us (m_cpu_seq): no sleep of a fixed length, which
	 * cost a millisecond a machine.
	 */
	deadline = sc_now_ns() + 10ull * 1000 * 1000 * 1000;
	for (i = 0; i < started; i++) {
		pc = &m->m_pcpu[i];
		for (;;) {
			seq = atomic_load(&m->m_cpu_seq);
			if (atomic_load(&pc->pc_ktid) != 0 ||
			    atomic_load(&pc->pc_init_error) != 0 ||
			    sc_now_ns() > deadline)
				break;
			/* Deterministic: the CPU boots when drawn. */
			if (sc__wait_turn(false, UINT64_MAX) == SC_TURN_BLOCK)
				sc_cpu_event_wait(m, seq);
		}
		if (error == 0)
			error = atomic_load(&pc->pc_init_error);
	}
	if (error != 0) {
		m->m_ncpu = started;
		sc_machine_destroy(m);
		return (error);
	}
	*mp = m;
	return (0);
}

/*
 * Send IPI_STOP to CPUs that run a thread, until all have left (about
 * 3 s).  Each CPU that stops wakes us; the others get the IPI again.
 */
static bool
sc_machine_stop_cpus(struct sc_machine *m)
{
	uint64_t deadline = sc_now_ns() + 3ull * 1000 * 1000 * 1000;
	struct sc_pcpu *pc;
	uint32_t seq;
	bool all;
	int i;

	for (;;) {
		seq = atomic_load(&m->m_cpu_seq);
		all = true;
		for (i = 0; i < m->m_ncpu; i++) {
			pc = &m->m_pcpu[i];
			if (atomic_load(&pc->pc_stopped))
				continue;
			all = false;
			atomic_fetch_add(&pc->pc_idle_futex, 1);
			sc__futex_wake(&pc->pc_idle_futex, 1);
			if (atomic_load(&pc->pc_curthread) != pc->pc_idlethread)
				sc__ipi_cpu(pc, SC_IPI_STOP, 0);
		}
		if (all)
			return (true);
		if (sc_now_ns() > deadline)
			return (false);
		sc_cpu_event_wait(m, seq);
	}
}

static void
sc_machine_free_threads(struct sc_threadq *q)
{
	struct sc_thread *td, *tdnext;

	TAILQ_FOREACH_SAFE(td, q, td_plist, tdnext) {
		/* A swapped-out stack faults (PROT_NONE): it goes. */
		if (td->td_kstack_map != NULL && TD_IS_SWAPPED(td)) {
			sc__san_unpoison(td->td_kstack);
			(void)munmap(td->td_kstack_map, td->td_kstack_maplen);
		} else
			sc__map_put(td->td_kstack_map, td->td_kstack_maplen,
			    true);
		sc__ustack_free(td);
		sc__san_tsan_destroy_fiber(td->td_tsan_fiber);
		free(td);
	}
}

static void
sc_machine_free(struct sc_machine *m)
{
	struct sc_proc *p, *pnext;

	for (p = m->m_procs; p != NULL; p = pnext) {
		pnext = p->p_next;
		sc_machine_free_threads(&p->p_threads);
		free(p);
	}
	/* The thread zone: its structs are on no proc's list. */
	sc_machine_free_threads(&m->m_thread_free);
	sc__trace_fini(m);
	sc_machine_set_hook(m, NULL, NULL);
	while (m->m_hooks_old != NULL) {
		struct sc_hook *h = m->m_hooks_old;

		m->m_hooks_old = h->h_next;
		free(h);
	}
	/* The process's cache takes them, for the next machine. */
	while (m->m_nkstack_cache > 0)
		sc__map_put(m->m_kstack_cache[--m->m_nkstack_cache],
		    SC_PAGE_SIZE + m->m_kstack_len, true);
	(void)pthread_mutex_destroy(&m->m_list_mtx);	/* unlocked: no fail */
	sc__ds_free(m);
	sc__sleepq_machine(m, -1);
	free(m->m_pcpu);
	free(m->m_nostop);
	free(m);
}

void
sc_machine_destroy(struct sc_machine *m)
{
	struct sc_thread *td;
	int i;

	if (m == NULL)
		return;
	/* A CPU that waits for the caller's spin lock, interrupts
	 * disabled, could not be stopped; the sleep-queue chains, which
	 * the destroy takes, are spin locks too. */
	SC_KASSERT(sc__spin_held_count() == 0, , "sc_machine_destroy with a "
	    "spin lock held (a thread lock?)");
	SC_KASSERT(sc_curthread() == NULL ||
	    sc_curthread()->td_machine != m, , "thread %d destroys its own "
	    "machine", sc_curthread()->td_tid);
	/* The CPU pthreads exist only in the process that created m. */
	SC_KASSERT(getpid() == m->m_pid, , "machine of pid %d destroyed in "
	    "pid %d: a machine does not survive fork(); leaking it",
	    (int)m->m_pid, (int)getpid());
	sc__ds_stop(m);
	atomic_store(&m->m_dying, 1);
	if (!sc_machine_stop_cpus(m)) {
		for (i = 0; i < m->m_ncpu; i++) {
			if (atomic_load(&m->m_pcpu[i].pc_stopped))
				continue;
			td = atomic_load(&m->m_pcpu[i].pc_curthread);
			fprintf(stderr, "stackcap: sc_machine_destroy: cpu%d "
			    "cannot be stopped: thread %d \"%s\" runs where "
			    "it cannot be interrupted safely (libc, the "
			    "loader, or interrupts disabled); leaking the "
			    "machine rather than hang\n", i, td->td_tid,
			    td->td_name);
		}
		return;
	}
	for (i = 0; i < m->m_ncpu; i++)
		(void)pthread_join(m->m_pcpu[i].pc_pthread, NULL); /* stopped */
	sc__sleepq_remove_machine(m);
	sc__ipi_fini(m);
	sc_machine_free(m);
}
