/*
 * The schedulers and protocols of the kernel's history: ULE's window
 * (RUNNING, td_oncpu still NOCPU, the lock free), FreeBSD 12's NMI
 * protocol under 4BSD and under ULE, and arm64, which cannot capture a
 * running thread.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "scn_target.h"

/*
 * ULE's window, from the requester's side: hold the switch that brings
 * the target in at the point where it is RUNNING, its td_oncpu still
 * NOCPU and its lock free, until the requester has seen it there (a NOCPU
 * spin, or a capture that returned).
 */
struct scn_incoming {
	struct scn_target *t;
	_Atomic int	fired;		/* the target is in the window */
	_Atomic int	done;		/* the capture returned */
	_Atomic int	failed;
};

static void
hook_incoming(void *arg, enum sc_hook_point point, struct sc_thread *td)
{
	struct scn_incoming *h = arg;

	if (point != SC_HOOK_SWITCH_INCOMING || td != h->t->td ||
	    atomic_exchange(&h->fired, 1))
		return;
	/* Interrupts are disabled here: scn_pause() does not switch. */
	if (!SCN_WAIT(SCN_CNT(h->t->m, retry_nocpu) != 0 ||
	    atomic_load(&h->done)))
		atomic_store(&h->failed, 1);
}

/*
 * The target sleeps; the requester wakes it, an idle CPU chooses it, and
 * the hook holds that switch in ULE's window while the requester locks
 * the target and captures it.
 */
int
scn_incoming(struct sc_proc *p, struct scn_result *res)
{
	struct sc_machine *m = sc_proc_machine(p);
	struct scn_incoming h = { 0 };
	struct scn_target t;
	int error;

	if ((error = scn_target_start(p, &t, "incoming", 1)) != 0)
		return (error);
	atomic_store(&t.cmd, CMD_SLEEP);
	if (!SCN_WAIT(atomic_load(&t.acked) >= CMD_SLEEP) ||
	    !SCN_WAIT(scn_in_state(t.td, SC_TDS_INHIBITED)))
		return (ETIMEDOUT);
	h.t = &t;
	sc_machine_set_hook(m, hook_incoming, &h);
	sc_wakeup(&t);
	if (!SCN_WAIT(atomic_load(&h.fired) >= 1))
		return (ETIMEDOUT);
	scn_capture(p, &t, res);
	atomic_store(&h.done, 1);
	sc_machine_set_hook(m, NULL, NULL);
	res->raced = !atomic_load(&h.failed);
	return (scn_target_stop(&t));
}

/*
 * FreeBSD 12's protocol under 4BSD: a running thread is captured (the
 * sched_lock keeps it on its CPU); one with interrupts disabled takes the
 * NMI at once and answers depth 0: EAGAIN (error2), no deferral.
 */
int
scn_nmi_4bsd(struct sc_proc *p, struct scn_result *res)
{
	struct sc_machine *m = sc_proc_machine(p);
	struct scn_result second;
	struct scn_target t;
	int error;

	if ((error = scn_target_start(p, &t, "nmi", 1)) != 0)
		return (error);
	scn_capture(p, &t, res);
	atomic_store(&t.cmd, CMD_CLI_HOLD);
	if (!SCN_WAIT(atomic_load(&t.acked) >= CMD_CLI_HOLD))
		return (ETIMEDOUT);
	scn_capture(p, &t, &second);
	res->error2 = second.error;
	atomic_store(&t.cmd, CMD_NONE);
	res->raced = res->error == 0 && second.error == EAGAIN &&
	    SCN_CNT(m, ipis_deferred) == 0;
	return (scn_target_stop(&t));
}

static struct sc_proc *scn_arm64_proc;
static _Atomic int scn_arm64_self_error = -1;
static _Atomic int scn_arm64_self_state = -1;

/* A running thread captures itself, and lists its process. */
static void
arm64_self(void *arg)
{
	struct sc_thread *self = sc_curthread();
	struct sc_kstack kk[4];
	struct sc_stack st;
	size_t n, i;

	(void)arg;
	sc_thread_lock(self);
	atomic_store(&scn_arm64_self_error, sc_stack_save_td(&st, self));
	sc_thread_unlock(self);
	if (sc_proc_kstack(scn_arm64_proc, kk, 4, &n) == 0)
		for (i = 0; i < n && i < 4; i++)
			if (kk[i].tid == sc_thread_tid(self))
				atomic_store(&scn_arm64_self_state,
				    kk[i].state);
}

/*
 * bdragon's and jhibbits' catch: on arm64 (and riscv, powerpc) the kernel
 * cannot capture a running thread: EOPNOTSUPP, curthread included, so
 * procstat shows <running> for every running thread.
 */
int
scn_arm64_running(struct sc_proc *p, struct scn_result *res)
{
	struct scn_target t;
	struct sc_thread *self;
	int error;

	if ((error = scn_target_start(p, &t, "runner", 0)) != 0)
		return (error);
	scn_capture(p, &t, res);
	atomic_store(&scn_arm64_self_error, -1);
	atomic_store(&scn_arm64_self_state, -1);
	scn_arm64_proc = p;
	if (sc_thread_create(p, "self", arm64_self, NULL, &self) != 0)
		return (ENOMEM);
	if (sc_thread_join(self) != 0)
		return (EIO);
	res->raced = res->error == EOPNOTSUPP &&
	    atomic_load(&scn_arm64_self_error) == EOPNOTSUPP &&
	    atomic_load(&scn_arm64_self_state) == SC_KKST_STATE_RUNNING;
	return (scn_target_stop(&t));
}
