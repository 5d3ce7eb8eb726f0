/*
 * What the scenario files share (internal to tools/; scenarios.h is the
 * interface).  A target thread spins in a known chain, target_main ->
 * spin_outer -> spin_inner, and obeys commands from its loop; a hook gives
 * it the command at the exact protocol step where the scenario wants the
 * race, and waits (bounded) until it obeyed.
 *
 *	scn_target.c	the target, its commands, the hooks, the bounded wait
 *	scn_paths.c	one scenario per path of sc_stack_save_td()
 *	scn_mistakes.c	the reviewers' catches (cfg.mistakes)
 *	scn_history.c	the schedulers, protocols and arm64 of the history
 *	scn_snapshot.c	per-CPU request slots and sc_machine_snapshot()
 *	scn_clock.c	the clock's preemption
 *	scenarios.c	the table and the runner
 */
#ifndef SC_SCN_TARGET_H
#define SC_SCN_TARGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "scenarios.h"

/*
 * The bound of any wait (SCN_WAIT), 10 s.  A test lowers it, before it
 * creates the machine, to make a wait expire on purpose: what a scenario
 * does then (stop its threads before its frame returns) is tested too.
 */
#define SCN_BOUND_NS	(10ULL * 1000 * 1000 * 1000)
extern uint64_t	scn_bound_ns;
#define SCN_MS(ms)	((ms) * 1000L * 1000)	/* a capture's bound */

/* Commands a target obeys from its spin loop. */
enum scn_cmd {
	CMD_NONE = 0,
	CMD_SLEEP,	/* sleep on its wait channel */
	CMD_YIELD,	/* sc_yield() once */
	CMD_USER,	/* spin in user mode until CMD_NONE */
	CMD_CLI,	/* disable interrupts until an IPI was deferred */
	CMD_BLOCK,	/* block the IPI signal until CMD_NONE */
	CMD_CLI_HOLD,	/* disable interrupts until CMD_NONE */
	CMD_LOCK_HOLD,	/* hold lock_td's thread lock until CMD_NONE */
	CMD_CLI_LOCK,	/* disable interrupts, then lock lock_td once */
	CMD_EXIT
};

struct scn_target {
	struct sc_machine *m;
	struct sc_thread *td;
	_Atomic int	cmd;
	_Atomic int	acked;		/* the last command taken */
	_Atomic int	looping;	/* its loop (spin_inner()) began: a
					   capture from now on holds the
					   chain */
	_Atomic int	no_preempt;	/* never yield of its own accord */
	const void	*wchan;		/* CMD_SLEEP's channel (NULL: the
					   target itself) */
	struct sc_thread *lock_td;	/* whose thread lock CMD_LOCK_HOLD
					   and CMD_CLI_LOCK take */
	int		bind;		/* 1 + the CPU it binds itself to,
					   0: none */
};

/* A hook that commands the target (scn_hook_command) or makes it spin on
 * a lock the requester holds (scn_hook_spin_on_lock). */
struct scn_hook {
	struct scn_target *t;
	enum sc_hook_point point;
	int		cmd;		/* the command to give at the point */
	enum sc_td_state wait_for;	/* the target state to wait for */
	struct sc_thread *other;	/* must be running after it */
	_Atomic int	fired;
	_Atomic int	in_window;
	_Atomic int	failed;
};

/*
 * One turn of a bounded wait.  On a plain pthread it is also a scheduling
 * point (sc_maybe_yield()), so that in deterministic mode (STACKCAP_SEED)
 * the machine runs while the scenario waits; a hook that waits on a CPU
 * (inside a switch, interrupts disabled) must not switch: it spins
 * (sc_cpu_spinwait(), a point that does not switch) and yields the host
 * core.  Without that point a deterministic run went on only at the
 * take-backs of the spinning CPU, 5 ms of its CPU time each: at load 10
 * test_protocol_seed3 took 35 s and cli_wait()'s wait of 10 s real time
 * expired before the IPI came (a stack through sc_maybe_yield, not
 * cli_wait).
 */
void	scn_pause(void);

/*
 * The bounded wait, the only one: true once cond holds, false when
 * scn_bound_ns passed first.  cond is evaluated again at each turn.
 */
#define SCN_WAIT(cond)	({						\
	struct sc_deadline dl_;						\
	bool ok_ = true;						\
									\
	sc_deadline_start(&dl_, scn_bound_ns);				\
	while (!(cond)) {						\
		if (sc_deadline_passed(&dl_)) {				\
			ok_ = false;					\
			break;						\
		}							\
		scn_pause();						\
	}								\
	ok_;								\
})

/* A counter of m, now. */
#define SCN_CNT(m, f)	(sc_counters_get(m).f)

/* td is in state s and, for RUNNING, on a CPU, otherwise off all. */
bool	scn_in_state(struct sc_thread *td, enum sc_td_state s);

/*
 * Start t and wait until it runs.  Its chain starts at target_main, or
 * with reuser at reuser_main: the same loop under another name, so that a
 * thread that reuses the struct of an exited target (no-proc-lock) has a
 * stack that tells it apart.  bind: 1 + the CPU it binds itself to, 0:
 * none.  scn_target_start(): target_main, unbound.
 */
int	scn_target_start_fn(struct sc_proc *p, struct scn_target *t,
	    const char *name, int no_preempt, bool reuser, int bind);
int	scn_target_start(struct sc_proc *p, struct scn_target *t,
	    const char *name, int no_preempt);
int	scn_target_stop(struct scn_target *t);

/* A capture as the kernel's callers make it: proc lock, thread lock. */
int	scn_capture(struct sc_proc *p, struct scn_target *t,
	    struct scn_result *res);

void	scn_hook_command(void *arg, enum sc_hook_point point,
	    struct sc_thread *td);
void	scn_hook_spin_on_lock(void *arg, enum sc_hook_point point,
	    struct sc_thread *td);
int	scn_run_hooked(struct sc_proc *p, struct scn_target *t,
	    struct scn_hook *h, sc_hook_fn fn, struct scn_result *res);

/* The scenarios' run functions, by file. */
int	scn_running(struct sc_proc *p, struct scn_result *res);
int	scn_user_mode(struct sc_proc *p, struct scn_result *res);
int	scn_switch_off(struct sc_proc *p, struct scn_result *res);
int	scn_idle_cpu(struct sc_proc *p, struct scn_result *res);
int	scn_other_thread(struct sc_proc *p, struct scn_result *res);
int	scn_nocpu_window(struct sc_proc *p, struct scn_result *res);
int	scn_interrupts_disabled(struct sc_proc *p, struct scn_result *res);
int	scn_lost_ipi(struct sc_proc *p, struct scn_result *res);
int	scn_lock_held(struct sc_proc *p, struct scn_result *res);
int	scn_spin_wait_intr(struct sc_proc *p, struct scn_result *res);

int	scn_stale_answer(struct sc_proc *p, struct scn_result *res);
int	scn_spin_held(struct sc_proc *p, struct scn_result *res);
int	scn_no_proc_lock(struct sc_proc *p, struct scn_result *res);
int	scn_no_proc_lock_swap(struct sc_proc *p, struct scn_result *res);

int	scn_incoming(struct sc_proc *p, struct scn_result *res);
int	scn_nmi_4bsd(struct sc_proc *p, struct scn_result *res);
int	scn_arm64_running(struct sc_proc *p, struct scn_result *res);

int	scn_snapshot(struct sc_proc *p, struct scn_result *res);
int	scn_snapshot_retry(struct sc_proc *p, struct scn_result *res);
int	scn_two_requesters(struct sc_proc *p, struct scn_result *res);
/* scn_clock.c */
int	scn_preempted(struct sc_proc *p, struct scn_result *res);
int	scn_preempt_in_window(struct sc_proc *p, struct scn_result *res);

#endif /* !SC_SCN_TARGET_H */
