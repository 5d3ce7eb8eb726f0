/*
 * Why a capture timed out: what /proc says of the target CPU's pthread.
 *
 * Kernel counterpart: none.  The kernel's stack_save_td() waits for the
 * IPI's answer without a bound; here the wait is bounded (docs/design.md,
 * "Beyond the kernel"), and a wait that ends unanswered is explained once
 * per machine and cause, by the requester, never in a handler.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sc_internal.h"

/*
 * What /proc/self/task/TID says of a CPU pthread: its signal mask and
 * pending signals (status), its Linux state (stat).  false: unreadable.
 */
struct sc_task_view {
	unsigned long long tv_blk, tv_pnd, tv_shdpnd;
	char		tv_state;
};

static bool
sc_task_read(pid_t ktid, const char *file, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)ktid,
	    file);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return (false);
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return (false);
	buf[n] = '\0';
	return (true);
}

static bool
sc_task_field(const char *buf, const char *name, unsigned long long *v)
{
	const char *line = strstr(buf, name);

	return (line != NULL && sscanf(line + strlen(name), "%llx", v) == 1);
}

static bool
sc_task_view(pid_t ktid, struct sc_task_view *tv)
{
	char buf[2048], *p;

	if (!sc_task_read(ktid, "status", buf, sizeof(buf)) ||
	    !sc_task_field(buf, "SigBlk:", &tv->tv_blk) ||
	    !sc_task_field(buf, "SigPnd:", &tv->tv_pnd) ||
	    !sc_task_field(buf, "ShdPnd:", &tv->tv_shdpnd))
		return (false);
	/* "pid (comm) S ...": comm may hold spaces and parentheses. */
	tv->tv_state = '?';
	if (sc_task_read(ktid, "stat", buf, sizeof(buf)) &&
	    (p = strrchr(buf, ')')) != NULL && p[1] == ' ' && p[2] != '\0')
		tv->tv_state = p[2];
	return (true);
}

/*
 * Does the mask blk block every standard signal but SIGKILL and SIGSTOP?
 * That is the mask of a pthread inside a handler installed with a full
 * sa_mask (stackcap's), or of one that blocked everything.
 */
static bool
sc_mask_full(unsigned long long blk)
{
	unsigned long long std = (1ULL << 31) - 1;

	std &= ~(1ULL << (SIGKILL - 1)) & ~(1ULL << (SIGSTOP - 1));
	return ((blk & std) == std);
}

/*
 * A capture timed out: say what is known of the target CPU's pthread,
 * once per machine and cause, on stderr (and in the counters for the two
 * causes that the program made and can fix: it replaced the IPI signal's
 * handler after sc_machine_create(), or a simulated thread blocked the
 * signal, which blocks it for every thread of that CPU: a mask belongs to
 * the CPU pthread).  Called by the requester after the bound, never on the
 * fast path nor in a handler.
 *
 * SigBlk alone does not tell a blocked signal: inside stackcap's own
 * handler (which runs with every signal blocked) and between the signal's
 * delivery and the handler's first instruction, the mask holds the IPI
 * signal too, and a pthread that Linux does not run for a while (a loaded
 * host) stays there as long.  So "blocks" is said only when the pthread was
 * not in the handler while /proc was read (pc_handler_gen even and the same
 * before and after), and either its mask is not a handler's full mask or
 * the signal is pending: a signal on its way into the handler has left the
 * pending set.  Otherwise the line says what was seen.
 *
 * A full mask with the signal pending is not proof either: a clock tick
 * and an IPI share the signal (ipi_sim.c), so a pthread on its way into
 * the handler for one may have the other queued.  test_timeout_interrupts_
 * off saw it once in a CI run: a CPU spinning with interrupts disabled,
 * whose ticks enter the handler every millisecond, was said to block the
 * signal.  So that case is looked at again, SC_DIAG_LOOKS times a
 * millisecond apart, and said only if the handler was not entered
 * meanwhile (pc_handler_gen the same) and every look saw the same.
 */
#define SC_DIAG_LOOKS	10

/* One look at pc's pthread: false if it is gone. */
static bool
sc_diag_look(struct sc_pcpu *pc, struct sc_task_view *tv, uint32_t *gen,
    bool *inhandler)
{
	uint32_t gen1;

	*gen = atomic_load(&pc->pc_handler_gen);
	if (!sc_task_view(atomic_load(&pc->pc_ktid), tv))
		return (false);
	gen1 = atomic_load(&pc->pc_handler_gen);
	*inhandler = *gen != gen1 || (*gen & 1) != 0;
	return (true);
}

void
sc__stack_intr_diagnose(struct sc_machine *m, struct sc_pcpu *pc)
{
	struct sc_task_view tv;
	unsigned long long bit;
	uint32_t gen0, gen;
	int signo = m->m_cfg.ipi_signo, look;
	bool blocked, pending, inhandler;

	if (!sc__ipi_handler_ours(signo)) {
		SC_CNT_INC(m, ipi_handler_lost);
		if ((atomic_fetch_or(&m->m_warned, 1) & 1) == 0)
			fprintf(stderr, "stackcap: capture timed out: the "
			    "handler of signal %d (the IPI signal) is no "
			    "longer stackcap's; the program replaced it "
			    "after sc_machine_create()\n", signo);
		return;
	}
	bit = 1ULL << (signo - 1);
	if (!sc_diag_look(pc, &tv, &gen0, &inhandler))
		return;
	for (look = 1, gen = gen0;; look++) {
		pending = ((tv.tv_pnd | tv.tv_shdpnd) & bit) != 0;
		/* A handler entered since the first look: not blocked. */
		blocked = (tv.tv_blk & bit) != 0 && !inhandler &&
		    gen == gen0 && (!sc_mask_full(tv.tv_blk) || pending);
		if (!blocked || !sc_mask_full(tv.tv_blk))
			break;
		if (look == SC_DIAG_LOOKS)
			break;
		usleep(1000);
		if (!sc_diag_look(pc, &tv, &gen, &inhandler))
			return;
	}
	if (blocked) {
		SC_CNT_INC(m, ipi_blocked);
		if ((atomic_fetch_or(&m->m_warned, 2) & 2) == 0)
			fprintf(stderr, "stackcap: capture timed out: cpu%d's "
			    "pthread blocks signal %d (the IPI signal); a "
			    "simulated thread that blocks it blocks it for "
			    "every thread of that CPU\n", pc->pc_cpuid, signo);
		return;
	}
	if ((atomic_fetch_or(&m->m_warned, 4) & 4) != 0)
		return;
	/* pc's interrupt state, read racily: what it was a moment ago. */
	fprintf(stderr, "stackcap: capture timed out: cpu%d's pthread (Linux "
	    "tid %d, state %c) did not answer the IPI within the bound; it "
	    "does not block signal %d (the IPI signal): %s, signal %s, %s, "
	    "interrupts %s\n", pc->pc_cpuid, (int)atomic_load(&pc->pc_ktid),
	    tv.tv_state, signo, inhandler ? "in stackcap's IPI handler" :
	    sc_mask_full(tv.tv_blk) ? "every signal blocked (entering a "
	    "handler)" : "not in a handler", pending ? "pending" :
	    "not pending", (atomic_load_explicit(&pc->pc_intr_deferred,
	    memory_order_relaxed) & SC_DEFER_IPI) != 0 ? "an IPI deferred" :
	    "no IPI deferred", atomic_load_explicit(&pc->pc_spinlock_count,
	    memory_order_relaxed) != 0 ? "disabled (spinlock_enter)" :
	    "enabled");
}

