/*
 * Protocol scenarios (see scenarios.h): the table, and the runner that
 * gives each one a machine of its own.  The scenarios are in scn_*.c
 * (scn_target.h lists them).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "scn_target.h"

const struct scn_scenario scn_scenarios[] = {
	{ .name = "running", .run = scn_running,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "capture a thread that spins on a CPU: one IPI, one "
	    "answer" },
	{ .name = "user-mode", .run = scn_user_mode,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "the target runs in user mode: no kernel frame, EBUSY" },
	{ .name = "switch-off", .run = scn_switch_off,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "the target sleeps right after the requester drops "
	    "its lock: NOCPU, retry, pcb walk" },
	{ .name = "idle-cpu", .run = scn_idle_cpu,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "the target sleeps just before the IPI: the idle thread "
	    "answers, retry, pcb walk" },
	{ .name = "other-thread", .run = scn_other_thread,
	    .ncpu = 1, .timeout_ns = SCN_MS(1000),
	    .summary = "one CPU: the target yields just before the IPI, "
	    "another thread answers, retry" },
	{ .name = "nocpu-window", .run = scn_nocpu_window,
	    .ncpu = 1, .timeout_ns = SCN_MS(1000),
	    .summary = "the requester reads td_oncpu in the middle of the "
	    "target's switch: spin, no IPI" },
	{ .name = "interrupts-disabled", .run = scn_interrupts_disabled,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "the target's CPU has interrupts disabled: "
	    "the IPI waits for spinlock_exit()" },
	{ .name = "lost-ipi", .run = scn_lost_ipi,
	    .ncpu = 2, .timeout_ns = SCN_MS(50),
	    .summary = "the IPI is lost (signal blocked): the bounded wait "
	    "gives ETIMEDOUT, the late handler does nothing" },
	{ .name = "lock-held", .run = scn_lock_held,
	    .ncpu = 2, .timeout_ns = SCN_MS(100),
	    .summary = "the thread lock held across the IPI, the target on "
	    "its way to sleep: deadlock, stopped by the bounded wait",
	    .hold_lock = 1 },
	{ .name = "spin-wait-intr", .run = scn_spin_wait_intr,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "the target waits for a spin lock, none other held: "
	    "its CPU takes the IPI between attempts" },
	{ .name = "stale-answer", .run = scn_stale_answer,
	    .ncpu = 2, .timeout_ns = SCN_MS(100),
	    .summary = "kib's catch: the answer word not cleared before "
	    "the IPI: an old answer is taken for a new capture",
	    .mistakes = SC_MISTAKE_STALE_ANSWER },
	{ .name = "spin-held", .run = scn_spin_held,
	    .ncpu = 2, .timeout_ns = SCN_MS(100),
	    .summary = "mjg's catch: the caller holds a spin lock that the "
	    "target needs with interrupts off: deadlock, bounded",
	    .mistakes = SC_MISTAKE_SPIN_HELD },
	{ .name = "no-proc-lock", .run = scn_no_proc_lock,
	    .ncpu = 2, .timeout_ns = SCN_MS(2000),
	    .summary = "mjg's catch: no proc lock: the target exits, its "
	    "struct is reused, the answer's pointer is another thread",
	    .mistakes = SC_MISTAKE_NO_PROC_LOCK },
	{ .name = "no-proc-lock-swap", .run = scn_no_proc_lock_swap,
	    .ncpu = 2, .timeout_ns = SCN_MS(2000),
	    .summary = "mjg's catch: no proc lock: the target is swapped out "
	    "after the unlock; the relock finds it swapped: KASSERT",
	    .mistakes = SC_MISTAKE_NO_PROC_LOCK, .flags = SCN_PANICS },
	{ .name = "arm64-running", .run = scn_arm64_running,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "arm64 (riscv, powerpc): no capture of a running "
	    "thread, curthread too: EOPNOTSUPP, <running>",
	    .arch = SC_ARCH_ARM64 },
	{ .name = "ule-incoming-nocpu", .run = scn_incoming,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "ULE: the target is RUNNING, td_oncpu still "
	    "NOCPU, its lock free: spin until it sets it, then IPI",
	    .sched = SCN_SCHED_ULE },
	{ .name = "nmi-4bsd", .run = scn_nmi_4bsd,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "FreeBSD 12's NMI protocol under 4BSD: right; with "
	    "interrupts disabled the NMI answers depth 0, EAGAIN",
	    .sched = SCN_SCHED_4BSD, .protocol = SC_PROTO_NMI },
	{ .name = "snapshot", .run = scn_snapshot,
	    .ncpu = 3, .timeout_ns = SCN_MS(1000),
	    .summary = "sc_machine_snapshot(): every running thread's CPU "
	    "interrupted in one round, the others walked" },
	{ .name = "snapshot-retry", .run = scn_snapshot_retry,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "a snapshot's target sleeps before the round's IPIs: "
	    "the idle thread answers, the next round walks its pcb" },
	{ .name = "capture-serial", .run = scn_two_requesters,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000), .capture_serial = 1,
	    .summary = "the kernel's intr_lock: a capture on cpu1 waits "
	    "for one on cpu0 to end" },
	{ .name = "capture-parallel", .run = scn_two_requesters,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "a request slot per CPU: a capture on cpu1 ends "
	    "while one on cpu0 waits for its IPI" },
	{ .name = "preempted", .run = scn_preempted,
	    .ncpu = 1, .timeout_ns = SCN_MS(1000),
	    .flags = SCN_CLOCK,
	    .summary = "the clock ends a spinning thread's slice: preempted "
	    "at the interrupt's end, its pcb shows the interrupt's frame" },
	{ .name = "preempt-in-window", .run = scn_preempt_in_window,
	    .ncpu = 1, .timeout_ns = SCN_MS(1000),
	    .flags = SCN_CLOCK,
	    .summary = "the clock preempts the target after the requester "
	    "read its td_oncpu: the IPI finds another thread, the retry "
	    "walks the pcb" },
	{ .name = "nmi-ule", .run = scn_incoming,
	    .ncpu = 2, .timeout_ns = SCN_MS(1000),
	    .summary = "FreeBSD 12's NMI protocol under 13's ULE: RUNNING "
	    "with td_oncpu NOCPU under the lock, ipi_cpu(NOCPU): KASSERT",
	    .sched = SCN_SCHED_ULE, .protocol = SC_PROTO_NMI,
	    .flags = SCN_PANICS },
};
const size_t scn_nscenarios = sizeof(scn_scenarios) / sizeof(scn_scenarios[0]);

const struct scn_scenario *
scn_find(const char *name)
{
	size_t i;

	for (i = 0; i < scn_nscenarios; i++)
		if (strcmp(scn_scenarios[i].name, name) == 0)
			return (&scn_scenarios[i]);
	return (NULL);
}

/* SCN_PANICS: the KASSERT's message, kept for the result. */
static char scn_panic_msg[512];

static void
scn_panic_record(const char *msg)
{
	snprintf(scn_panic_msg, sizeof(scn_panic_msg), "%s", msg);
}

int
scn_run(const struct scn_scenario *s, size_t trace_events,
    void (*show)(struct sc_machine *m, void *arg), void *arg,
    struct scn_result *res)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	struct sc_proc *p;
	int error;

	memset(res, 0, sizeof(*res));
	sc_machine_config_init(&cfg);
	cfg.ncpu = s->ncpu;
	cfg.capture_timeout_ns = s->timeout_ns;
	cfg.trace_events = trace_events;
	cfg.hold_lock_across_ipi = s->hold_lock;
	cfg.mistakes = s->mistakes;
	cfg.arch = s->arch;
	if (s->sched != SCN_SCHED_DEFAULT)
		cfg.sched = s->sched == SCN_SCHED_ULE ? SC_SCHED_ULE :
		    SC_SCHED_4BSD;
	cfg.protocol = s->protocol;
	cfg.capture_serial = s->capture_serial;
	if ((error = sc_machine_create(&cfg, &m)) != 0)
		return (error);
	scn_panic_msg[0] = '\0';
	if ((s->flags & SCN_PANICS) != 0)
		sc_set_panic_handler(scn_panic_record);
	if ((error = sc_proc_create(m, "scenario", &p)) == 0)
		error = s->run(p, res);
	if ((s->flags & SCN_PANICS) != 0) {
		sc_set_panic_handler(NULL);
		snprintf(res->panic, sizeof(res->panic), "%s", scn_panic_msg);
	}
	sc_machine_counters(m, &res->cnt);
	if (error != 0)
		fprintf(stderr, "scenario %s: a bounded wait expired (%s)\n",
		    s->name, strerror(error));
	if (show != NULL)
		show(m, arg);
	sc_machine_destroy(m);
	return (error);
}
