/*
 * Protocol scenarios: each one makes one race of sc_stack_save_td() happen
 * on demand, with the race-injection hooks and not with timing, on a
 * machine of its own.  stackcap-demo --scenario shows them with their
 * narrated trace; tests/test_protocol.c asserts the path each one takes.
 */
#ifndef SC_SCENARIOS_H
#define SC_SCENARIOS_H

#include <stddef.h>
#include <stdio.h>

#include "stackcap.h"
#include "stackcap/testing.h"

#define SCN_SNAP_MAX	16	/* snapshot entries a result keeps */

/* What a scenario's capture gave. */
struct scn_result {
	int		error;		/* sc_stack_save_td()'s return */
	struct sc_stack	stack;		/* the stack it captured */
	struct sc_counters cnt;		/* the machine's counters after it */
	int		target_tid;
	int		answer_tid;	/* the tid the target's pointer names
					   after the capture, if recorded
					   (no-proc-lock: another thread's) */
	int		raced;		/* the hook made the race happen */
	int		error2;		/* a second capture's, if any */
	char		panic[512];	/* the KASSERT's message, if one fired
					   (scenarios with SCN_PANICS) */
	int		overlapped;	/* capture-serial/-parallel: the
					   second requester's capture was
					   done while the first's request
					   was open */
	struct sc_kstack snap[SCN_SNAP_MAX]; /* snapshot*: its entries */
	size_t		nsnap;
	int		snap_tids[2];	/* snapshot*: the two spinners */
	int		sleeper_tid;	/* snapshot: the sleeping thread */
};

/* scn_scenario.sched: the config's default (STACKCAP_SCHED), or one. */
enum { SCN_SCHED_DEFAULT = 0, SCN_SCHED_ULE, SCN_SCHED_4BSD };
/* scn_scenario.flags */
#define SCN_PANICS	0x1	/* a KASSERT fires: record it, go on */
#define SCN_CLOCK	0x2	/* the clock's signal must preempt a thread
				   that spins without a call (TSan holds an
				   asynchronous signal until the thread
				   calls in: the scenario's wait expires) */

struct scn_scenario {
	const char	*name;		/* e.g. "switch-off" */
	const char	*summary;	/* one line, for --help */
	int		ncpu;
	long		timeout_ns;	/* the capture's bounded wait */
	int		hold_lock; /* teaching: hold the lock across the IPI */
	int		(*run)(struct sc_proc *p, struct scn_result *res);
	unsigned	mistakes;	/* cfg.mistakes: SC_MISTAKE_* */
	int		arch;		/* cfg.arch: SC_ARCH_* */
	int		sched;		/* SCN_SCHED_* */
	int		protocol;	/* cfg.protocol: SC_PROTO_* */
	unsigned	flags;		/* SCN_* */
	int		capture_serial;	/* cfg.capture_serial */
};

extern const struct scn_scenario scn_scenarios[];
extern const size_t scn_nscenarios;

/* The scenario named `name`, or NULL. */
const struct scn_scenario *scn_find(const char *name);

/*
 * Run s on a machine of its own, with a trace of trace_events events (0:
 * off).  Before the machine is destroyed, show(m, arg) is called (when not
 * NULL), e.g. to print the trace.  Returns 0, or an errno value when the
 * scenario could not be set up or a bounded wait expired (a message says
 * which on stderr).  Context: a plain pthread.
 */
int	scn_run(const struct scn_scenario *s, size_t trace_events,
	    void (*show)(struct sc_machine *m, void *arg), void *arg,
	    struct scn_result *res);

#endif /* !SC_SCENARIOS_H */
