/*
 * The protocol trace: a fixed-size, lock-free event ring per machine, and
 * its narrated timeline (the Chrome trace-event JSON is trace_json.c).
 *
 * No kernel counterpart: the kernel has KTR (sys/sys/ktr.h) for this kind
 * of ring; this one exists to teach the handshake.  Writers are the IPI
 * handler, the switch and the requester: a writer reserves a sequence
 * number with one fetch-and-add, fills its slot with relaxed atomic stores
 * and commits it with a release store, so it takes no lock, allocates
 * nothing and is async-signal-safe.  A reader keeps a slot only if its
 * commit word is the same before and after the copy.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "sc_internal.h"

#define SC_TR_WORDS	6		/* ts, cpu, tid, event | host tid <<
					   32, a0, a1 */

/* A ring slot (the key is sc_internal.h's). */
struct sc_trace_slot {
	_Atomic uint64_t ts_commit;	/* (a) seq + 1 once written, 0 while */
	uint64_t	ts_w[SC_TR_WORDS]; /* (a) relaxed atomic accesses only,
					   by the writer that reserved seq */
};

struct sc_trace {
	size_t		tr_n;		/* (c) slots */
	_Atomic uint64_t tr_next;	/* (a) next sequence number */
	_Atomic uint64_t tr_base;	/* (a) sc_trace_clear() point */
	struct sc_trace_slot tr_slot[];	/* (a) */
};

static const char *const sc_trace_names[SC_TRACE_NEVENTS] = {
	[SC_TRACE_CAPTURE_BEGIN] = "CAPTURE_BEGIN",
	[SC_TRACE_PCB_WALK] = "PCB_WALK",
	[SC_TRACE_LOCK_DROPPED] = "LOCK_DROPPED",
	[SC_TRACE_LOCK_TAKEN] = "LOCK_TAKEN",
	[SC_TRACE_NOCPU] = "NOCPU",
	[SC_TRACE_IPI_SENT] = "IPI_SENT",
	[SC_TRACE_IPI_DEFERRED] = "IPI_DEFERRED",
	[SC_TRACE_IPI_RECEIVED] = "IPI_RECEIVED",
	[SC_TRACE_WALK_DONE] = "WALK_DONE",
	[SC_TRACE_ANSWER_PUBLISHED] = "ANSWER_PUBLISHED",
	[SC_TRACE_STALE_IPI] = "STALE_IPI",
	[SC_TRACE_ANSWER_SEEN] = "ANSWER_SEEN",
	[SC_TRACE_RETRY] = "RETRY",
	[SC_TRACE_TIMEOUT] = "TIMEOUT",
	[SC_TRACE_CAPTURE_DONE] = "CAPTURE_DONE",
	[SC_TRACE_SWITCH] = "SWITCH",
	[SC_TRACE_STATE] = "STATE",
	[SC_TRACE_THREAD_REUSE] = "THREAD_REUSE",
	[SC_TRACE_SWAP] = "SWAP",
	[SC_TRACE_SNAPSHOT_BEGIN] = "SNAPSHOT_BEGIN",
	[SC_TRACE_SNAPSHOT_ROUND] = "SNAPSHOT_ROUND",
	[SC_TRACE_SNAPSHOT_DONE] = "SNAPSHOT_DONE",
	[SC_TRACE_PREEMPT] = "PREEMPT",
};

static const char *const sc_state_names[] = {
	"INACTIVE", "INHIBITED", "CAN_RUN", "RUNQ", "RUNNING"
};

const char *
sc_trace_event_name(int event)
{
	if (event < 0 || event >= SC_TRACE_NEVENTS)
		return ("?");
	return (sc_trace_names[event]);
}

int
sc__trace_init(struct sc_machine *m, size_t nevents)
{
	struct sc_trace *tr;

	if (nevents == 0)
		return (0);
	tr = calloc(1, sizeof(*tr) + nevents * sizeof(tr->tr_slot[0]));
	if (tr == NULL)
		return (ENOMEM);
	tr->tr_n = nevents;
	m->m_trace = tr;
	return (0);
}

void
sc__trace_fini(struct sc_machine *m)
{
	free(m->m_trace);
	m->m_trace = NULL;
}

/*
 * The Linux tid of the calling plain pthread, kept from its first event.
 * initial-exec: no allocation at the first use, which may be in a signal
 * handler; gettid() is async-signal-safe.
 */
static __thread int sc_trace_host_tid
    __attribute__((tls_model("initial-exec")));

static int
sc_trace_me(void)
{
	if (sc_trace_host_tid == 0)
		sc_trace_host_tid = (int)syscall(SYS_gettid);
	return (sc_trace_host_tid);
}

/*
 * Async-signal-safe: one fetch-and-add, stores, sc__ds_clock() (the vDSO),
 * and a plain pthread's first event, gettid().
 */
void
sc__trace_rec(struct sc_trace *tr, int event, int cpu, int tid, uint64_t a0,
    uint64_t a1)
{
	struct sc_trace_slot *sl;
	uint64_t seq, now = sc__ds_clock();
	uint64_t host = cpu == SC_NOCPU ? (uint32_t)sc_trace_me() : 0;

	seq = atomic_fetch_add_explicit(&tr->tr_next, 1, memory_order_relaxed);
	sl = &tr->tr_slot[seq % tr->tr_n];
	atomic_store_explicit(&sl->ts_commit, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	__atomic_store_n(&sl->ts_w[0], now, __ATOMIC_RELAXED);
	__atomic_store_n(&sl->ts_w[1], (uint64_t)(int64_t)cpu,
	    __ATOMIC_RELAXED);
	__atomic_store_n(&sl->ts_w[2], (uint64_t)(int64_t)tid,
	    __ATOMIC_RELAXED);
	__atomic_store_n(&sl->ts_w[3], (uint64_t)(uint32_t)event | host << 32,
	    __ATOMIC_RELAXED);
	__atomic_store_n(&sl->ts_w[4], a0, __ATOMIC_RELAXED);
	__atomic_store_n(&sl->ts_w[5], a1, __ATOMIC_RELAXED);
	atomic_store_explicit(&sl->ts_commit, seq + 1, memory_order_release);
}

size_t
sc_trace_snapshot(struct sc_machine *m, struct sc_trace_record *out,
    size_t max)
{
	struct sc_trace *tr = m->m_trace;
	struct sc_trace_slot *sl;
	uint64_t seq, start, end, w[SC_TR_WORDS];
	size_t n = 0;
	int i;

	if (tr == NULL)
		return (0);
	end = atomic_load(&tr->tr_next);
	start = end > tr->tr_n ? end - tr->tr_n : 0;
	if (start < atomic_load(&tr->tr_base))
		start = atomic_load(&tr->tr_base);
	for (seq = start; seq < end && n < max; seq++) {
		sl = &tr->tr_slot[seq % tr->tr_n];
		if (atomic_load_explicit(&sl->ts_commit,
		    memory_order_acquire) != seq + 1)
			continue; /* overwritten, or still being written */
		for (i = 0; i < SC_TR_WORDS; i++)
			w[i] = __atomic_load_n(&sl->ts_w[i], __ATOMIC_RELAXED);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&sl->ts_commit,
		    memory_order_relaxed) != seq + 1)
			continue;
		out[n].seq = seq;
		out[n].ts_ns = w[0];
		out[n].cpu = (int)(int64_t)w[1];
		out[n].tid = (int)(int64_t)w[2];
		out[n].event = (int)(uint32_t)w[3];
		out[n].host_tid = (int)(w[3] >> 32);
		out[n].arg0 = w[4];
		out[n].arg1 = w[5];
		n++;
	}
	return (n);
}

void
sc_trace_clear(struct sc_machine *m)
{
	if (m->m_trace != NULL)
		atomic_store(&m->m_trace->tr_base,
		    atomic_load(&m->m_trace->tr_next));
}

/* Every errno a function of the library can return, its own or one it
 * passes on from the system; ENOTSUP is EOPNOTSUPP on Linux. */
const char *
sc_errname(int error)
{
#define	SC_ERRNAME(e)	case e: return (#e)
	switch (error) {
	case 0:
		return ("0");
	SC_ERRNAME(EAGAIN);
	SC_ERRNAME(EALREADY);
	SC_ERRNAME(EBUSY);
	SC_ERRNAME(ECHILD);
	SC_ERRNAME(EDEADLK);
	SC_ERRNAME(EINTR);
	SC_ERRNAME(EINVAL);
	SC_ERRNAME(EIO);
	SC_ERRNAME(ENOENT);
	SC_ERRNAME(ENOMEM);
	SC_ERRNAME(EOPNOTSUPP);
#if ENOTSUP != EOPNOTSUPP
	SC_ERRNAME(ENOTSUP);
#endif
	SC_ERRNAME(EPERM);
	SC_ERRNAME(ESRCH);
	SC_ERRNAME(ETIMEDOUT);
	default:
		return ("E?");
	}
#undef SC_ERRNAME
}

static const char *
sc_statename(uint64_t s)
{
	return (s < sizeof(sc_state_names) / sizeof(sc_state_names[0]) ?
	    sc_state_names[s] : "?");
}

/* Who did it: "cpu1" for a CPU, "requester" (on cpuN) for the capturer. */
static void
sc_trace_actor(const struct sc_trace_record *r, bool requester, char *buf,
    size_t len)
{
	if (requester && r->cpu == SC_NOCPU)
		snprintf(buf, len, "requester");
	else if (requester)
		snprintf(buf, len, "requester on cpu%d", r->cpu);
	else if (r->cpu == SC_NOCPU)
		snprintf(buf, len, "pthread");
	else
		snprintf(buf, len, "cpu%d", r->cpu);
}

/* One event in the kernel's words. */
void
sc__trace_narrate(const struct sc_trace_record *r, char *buf, size_t len)
{
	char who[40];

	switch (r->event) {
	case SC_TRACE_CAPTURE_BEGIN:
		sc_trace_actor(r, true, who, sizeof(who));
		snprintf(buf, len, "%s: stack_save_td(td %d), thread lock held",
		    who, r->tid);
		break;
	case SC_TRACE_PCB_WALK:
		sc_trace_actor(r, true, who, sizeof(who));
		snprintf(buf, len, "%s: td %d is not running: walk from its "
		    "pcb_rbp, %" PRIu64 " frames", who, r->tid, r->arg0);
		break;
	case SC_TRACE_LOCK_DROPPED:
		sc_trace_actor(r, true, who, sizeof(who));
		snprintf(buf, len, "%s: td %d is running: thread_unlock(td %d)",
		    who, r->tid, r->tid);
		break;
	case SC_TRACE_LOCK_TAKEN:
		sc_trace_actor(r, true, who, sizeof(who));
		snprintf(buf, len, "%s: thread_lock(td %d)", who, r->tid);
		break;
	case SC_TRACE_NOCPU:
		sc_trace_actor(r, true, who, sizeof(who));
		if (r->arg0 == 0)
			snprintf(buf, len, "%s: td %d has td_oncpu NOCPU "
			    "(mid-switch, or off its CPU already): spin, no "
			    "IPI", who, r->tid);
		else
			snprintf(buf, len, "%s: td %d has td_oncpu cpu%" PRIu64
			    " after %" PRIu64 " spins on NOCPU (the spins "
			    "after the first are not traced)", who, r->tid,
			    r->arg1, r->arg0);
		break;
	case SC_TRACE_IPI_SENT:
		sc_trace_actor(r, true, who, sizeof(who));
		snprintf(buf, len, "%s: ipi_cpu(cpu%" PRIu64 ", IPI_TRACE) "
		    "for td %d [ipi %" PRIu64 "]", who, r->arg0, r->tid,
		    r->arg1);
		break;
	case SC_TRACE_IPI_DEFERRED:
		snprintf(buf, len, "cpu%d: IPI arrives with interrupts "
		    "disabled (td %d): held pending until spinlock_exit()",
		    r->cpu, r->tid);
		break;
	case SC_TRACE_IPI_RECEIVED:
		snprintf(buf, len, "cpu%d: IPI_TRACE received, interrupted "
		    "td %d at rbp %#" PRIx64 " [ipi %" PRIu64 "]", r->cpu,
		    r->tid, r->arg0, r->arg1);
		break;
	case SC_TRACE_WALK_DONE:
		/* a1: was the interrupted %rsp on td's kernel stack? */
		if (r->arg0 != 0)
			snprintf(buf, len, "cpu%d: walked td %d's kernel "
			    "stack: %" PRIu64 " frames", r->cpu, r->tid,
			    r->arg0);
		else if (r->arg1 == 0)
			snprintf(buf, len, "cpu%d: walked 0 frames of td %d "
			    "(interrupted outside the kernel stack: user mode)",
			    r->cpu, r->tid);
		else
			snprintf(buf, len, "cpu%d: walked 0 frames of td %d's "
			    "kernel stack (no frame chain from %%rbp: code "
			    "without frame pointers)", r->cpu, r->tid);
		break;
	case SC_TRACE_ANSWER_PUBLISHED:
		snprintf(buf, len, "cpu%d: stack_intr_td = td %d (release "
		    "store), requester woken", r->cpu, r->tid);
		break;
	case SC_TRACE_STALE_IPI:
		snprintf(buf, len, "cpu%d: IPI_TRACE finds no open request for "
		    "this CPU (its requester gave up): nothing done", r->cpu);
		break;
	case SC_TRACE_ANSWER_SEEN:
		sc_trace_actor(r, true, who, sizeof(who));
		/* a1: the generation of the answer's struct. */
		if (r->arg0 == (uint64_t)r->tid)
			snprintf(buf, len, "%s: answer names td %" PRIu64
			    ", the target", who, r->arg0);
		else
			snprintf(buf, len, "%s: stack_intr_td == td, the "
			    "same pointer, but td %d exited and its struct "
			    "was reused: it is td %" PRIu64 " now (generation "
			    "%" PRIu64 "), whose stack is taken for td %d's",
			    who, r->tid, r->arg0, r->arg1, r->tid);
		break;
	case SC_TRACE_RETRY:
		sc_trace_actor(r, true, who, sizeof(who));
		snprintf(buf, len, "%s: answer names td %" PRIu64
		    ", not td %d: retry (%s)", who, r->arg0, r->tid,
		    r->arg1 == 1 ? "the CPU went idle" :
		    "another thread runs there");
		break;
	case SC_TRACE_TIMEOUT:
		sc_trace_actor(r, true, who, sizeof(who));
		snprintf(buf, len, "%s: no answer for td %d within %" PRIu64
		    " ms: give up, ETIMEDOUT", who, r->tid, r->arg0 / 1000000);
		break;
	case SC_TRACE_CAPTURE_DONE:
		sc_trace_actor(r, true, who, sizeof(who));
		snprintf(buf, len, "%s: stack_save_td(td %d) returns %s, "
		    "%" PRIu64 " frames", who, r->tid, sc_errname((int)r->arg0),
		    r->arg1);
		break;
	case SC_TRACE_SWITCH:
		snprintf(buf, len, "cpu%d: cpu_switch from td %d to td "
		    "%" PRIu64, r->cpu, r->tid, r->arg0);
		break;
	case SC_TRACE_STATE:
		snprintf(buf, len, "td %d: %s -> %s", r->tid,
		    sc_statename(r->arg0), sc_statename(r->arg1));
		break;
	case SC_TRACE_THREAD_REUSE:
		sc_trace_actor(r, false, who, sizeof(who));
		snprintf(buf, len, "%s: thread_alloc(): td %d takes the struct "
		    "of td %" PRIu64 " (reaped, joined) from thread_zone, "
		    "generation %" PRIu64, who, r->tid, r->arg0, r->arg1);
		break;
	case SC_TRACE_SWAP:
		snprintf(buf, len, "td %d: %s", r->tid, r->arg0 != 0 ?
		    "vm_thread_swapout(): kernel stack swapped out (unmapped), "
		    "TDI_SWAPPED" : "vm_thread_swapin(): kernel stack swapped "
		    "in");
		break;
	case SC_TRACE_SNAPSHOT_BEGIN:
		sc_trace_actor(r, true, who, sizeof(who));
		snprintf(buf, len, "%s: sc_machine_snapshot(): %" PRIu64
		    " threads listed, each process's under its proc lock", who,
		    r->arg0);
		break;
	case SC_TRACE_SNAPSHOT_ROUND:
		sc_trace_actor(r, true, who, sizeof(who));
		snprintf(buf, len, "%s: snapshot round %" PRIu64 ": IPI_TRACE "
		    "to %" PRIu64 " CPU%s at once, an answer slot each", who,
		    r->arg0, r->arg1, r->arg1 == 1 ? "" : "s");
		break;
	case SC_TRACE_SNAPSHOT_DONE:
		sc_trace_actor(r, true, who, sizeof(who));
		snprintf(buf, len, "%s: snapshot of %" PRIu64 " threads done "
		    "in %" PRIu64 " round%s", who, r->arg0, r->arg1,
		    r->arg1 == 1 ? "" : "s");
		break;
	case SC_TRACE_PREEMPT:
		sc_trace_actor(r, false, who, sizeof(who));
		snprintf(buf, len, "%s: td %d preempted (mi_switch(SW_INVOL)): "
		    "%s", who, r->tid, r->arg0 != 0 ? "its time slice is "
		    "spent and another thread waits, at the clock "
		    "interrupt's end" : "the preemption a clock interrupt "
		    "owed it, at a safe point (critical_exit(), "
		    "spinlock_exit(), ast())");
		break;
	default:
		snprintf(buf, len, "event %d", r->event);
	}
}

/* A snapshot in a buffer of our own; NULL when off or out of memory. */
struct sc_trace_record *
sc__trace_take(struct sc_machine *m, size_t *np)
{
	struct sc_trace_record *recs;

	if (m->m_trace == NULL)
		return (NULL);
	recs = calloc(m->m_trace->tr_n, sizeof(*recs));
	if (recs != NULL)
		*np = sc_trace_snapshot(m, recs, m->m_trace->tr_n);
	return (recs);
}

/*
 * A step of the requester in sc_stack_save_td() (not of a handler): what
 * the viewers (trace_json.c, trace_svg.c) put on the requester's track.
 */
bool
sc__trace_capture_step(int event)
{
	switch (event) {
	case SC_TRACE_CAPTURE_BEGIN:
	case SC_TRACE_PCB_WALK:
	case SC_TRACE_LOCK_DROPPED:
	case SC_TRACE_LOCK_TAKEN:
	case SC_TRACE_NOCPU:
	case SC_TRACE_IPI_SENT:
	case SC_TRACE_ANSWER_SEEN:
	case SC_TRACE_RETRY:
	case SC_TRACE_TIMEOUT:
	case SC_TRACE_CAPTURE_DONE:
		return (true);
	default:
		return (false);
	}
}

/* A step of the requester of a snapshot (sc_machine_snapshot()). */
bool
sc__trace_snapshot_step(int event)
{
	return (event == SC_TRACE_SNAPSHOT_BEGIN ||
	    event == SC_TRACE_SNAPSHOT_ROUND ||
	    event == SC_TRACE_SNAPSHOT_DONE);
}

/*
 * The requester (a plain pthread) whose Linux tid is host_tid, as an
 * index into hosts[0..*n): the viewers give each one a track, in the order
 * of their first events.  A new one is added while *n < max; past that,
 * the last (max - 1) takes the rest.
 */
int
sc__trace_requester(int *hosts, int *n, int max, int host_tid)
{
	int q;

	for (q = 0; q < *n; q++)
		if (hosts[q] == host_tid)
			return (q);
	if (*n == max)
		return (max - 1);
	hosts[(*n)++] = host_tid;
	return (q);
}

/*
 * The earliest timestamp of recs[0..n), the outputs' time 0.  Not always
 * recs[0]'s: a writer reads the clock before it takes its sequence number,
 * so one delayed in between (preempted, or interrupted by an IPI handler
 * that records) has an earlier time than events numbered before it, and
 * a time relative to recs[0] would wrap around.
 */
uint64_t
sc__trace_base(const struct sc_trace_record *recs, size_t n)
{
	uint64_t base = n > 0 ? recs[0].ts_ns : 0;
	size_t i;

	for (i = 1; i < n; i++)
		if (recs[i].ts_ns < base)
			base = recs[i].ts_ns;
	return (base);
}

int
sc_trace_print(struct sc_machine *m, FILE *fp)
{
	struct sc_trace_record *recs;
	char line[256];
	size_t i, n = 0;
	uint64_t base;

	if ((recs = sc__trace_take(m, &n)) == NULL)
		return (m->m_trace == NULL ? ENOENT : ENOMEM);
	base = sc__trace_base(recs, n);
	for (i = 0; i < n; i++) {
		sc__trace_narrate(&recs[i], line, sizeof(line));
		fprintf(fp, "%10.3f us  %s\n",
		    (double)(recs[i].ts_ns - base) / 1000.0, line);
	}
	free(recs);
	return (ferror(fp) ? EIO : 0);
}
