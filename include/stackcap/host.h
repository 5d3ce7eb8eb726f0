/*
 * stackcap/host.h: the capture protocol on the host's own threads
 * (docs/host.md).  Where is every thread of this process right now?
 *
 *	struct sc_host_thread t[256];
 *	size_t n;
 *
 *	if (sc_host_snapshot(t, 256, &n, 100000000L) == 0)
 *		sc_host_print(stderr, t, n);
 *
 * Every thread named in /proc/self/task gets one real-time signal, all in
 * flight at once; each answer is claimed with the request's tag and proven
 * to come from the thread asked (the signal is queued on the one thread of
 * this process that has the tid when it is sent, and the handler answers
 * with its own tid; an answer of an earlier request, or of a thread that
 * took an exited thread's tid after the request, cannot claim the tag);
 * the handler walks into a library buffer that the
 * caller copies out, so a handler that runs after the call gave up writes
 * nowhere that matters.  The whole call is bounded by timeout_ns.
 *
 * Context of every function here: any thread of the process but a signal
 * handler (they open /proc and allocate); not after fork() in the child
 * of a threaded parent.
 */
#ifndef STACKCAP_HOST_H
#define STACKCAP_HOST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <stackcap.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A thread's verdict (sc_host_thread.verdict, sc_host_capture()). */
enum {
	SC_HOST_OK,		/* it answered with at least one frame */
	SC_HOST_EMPTY,		/* it answered; no frame could be walked */
	SC_HOST_BLOCKED,	/* its mask blocks the signal while it is
				   pending (SigBlk and SigPnd of
				   /proc/self/task/TID/status) */
	SC_HOST_EXITED,		/* it exited before it could answer */
	SC_HOST_TIMEDOUT,	/* no answer within the bound, not blocked */
	SC_HOST_SELF		/* the caller, walked directly */
};

/*
 * One thread.  stack.pcs[0] is the interrupted pc, then the return
 * addresses, innermost first.  Bit i of unwound is set when pcs[i] came
 * from libunwind (DWARF call frame information, for code built without
 * frame pointers, glibc's), clear when it came from the frame-pointer
 * walk (sc_stack_walk()).  Fields may be added at the end.
 */
struct sc_host_thread {
	pid_t		tid;
	int		verdict;	/* SC_HOST_* */
	char		name[16];	/* /proc/self/task/TID/comm */
	struct sc_stack	stack;
	uint64_t	unwound;
};

/*
 * Every thread of the calling process into out[0..max), in the order of
 * /proc/self/task; *n is the number of threads listed, which may exceed
 * max.  Returns 0; ENOSPC when max was too small (out holds the first max
 * threads' answers, *n - max were left out); EINVAL (out NULL with max >
 * 0, n NULL, timeout_ns <= 0); EAGAIN when another snapshot or capture of
 * this process still ran at the bound; EDEADLK from inside the library's
 * own signal handler; EBUSY when the program installed its own handler
 * on the signal (sc_host_set_signal()); ENOMEM, or an error of opening
 * /proc/self/task.  A thread that exits while it is listed is EXITED, or
 * left out when it had exited before the listing.
 */
SC_EXTERN int	sc_host_snapshot(struct sc_host_thread *out, size_t max,
		    size_t *n, long timeout_ns);

/*
 * One thread, tid, of the calling process.  Returns its verdict
 * (SC_HOST_*, >= 0; st holds the stack for SC_HOST_OK and SC_HOST_SELF,
 * depth 0 otherwise), or a negative errno: -EINVAL (st NULL, tid <= 0,
 * timeout_ns <= 0), -ESRCH (tid is not a thread of this process: another
 * process's, or none), and the others of sc_host_snapshot(), negated.
 * An exited thread of ours whose tid no process has is -ESRCH too: the
 * kernel keeps no trace of it.
 */
SC_EXTERN int	sc_host_capture(pid_t tid, struct sc_stack *st,
		    long timeout_ns);

/*
 * The signal the protocol uses.  By default the first use picks the
 * highest real-time signal whose disposition is SIG_DFL, from SIGRTMAX
 * down to SIGRTMIN + 4 (below that are the simulated machine's).  Set it
 * before the first use, or between calls: signo must be in SIGRTMIN ..
 * SIGRTMAX (else EINVAL) with no handler of the program's (else EBUSY;
 * the program's handler is left as it was).  A signal used before stays
 * with the library's handler, which ignores what it did not ask for: a
 * signal of a request still pending in a thread that blocks it must not
 * take the default action (terminate).  Returns 0.
 */
SC_EXTERN int	sc_host_set_signal(int signo);

/* The signal in use, or 0 before the first use.  Context: any. */
SC_EXTERN int	sc_host_signal(void);

/* "ok", "empty", "blocked", "exited", "timedout", "self"; "?" for others.
 * Context: any. */
SC_EXTERN const char *sc_host_verdict_name(int verdict);

/*
 * The outputs.  sc_host_print(): like `procstat -kk`, one line a thread,
 * "PID TID COMM TDNAME KSTACK", frames "func+0x1c" innermost first, a
 * frame from libunwind marked with a trailing '*', and the verdict in
 * place of the stack when there is none.  sc_host_print_folded(): the
 * folded stacks of flame graphs, "comm;tdname;outer;...;inner 1", one
 * line a thread with a stack.  sc_host_print_json(): one JSON object,
 * {"pid": P, "threads": [{"tid", "name", "verdict", "frames": [{"pc",
 * "func", "off", "walker": "fp"|"unwind"}]}]}.
 */
SC_EXTERN void	sc_host_print(FILE *fp, const struct sc_host_thread *t,
		    size_t n);
SC_EXTERN void	sc_host_print_folded(FILE *fp,
		    const struct sc_host_thread *t, size_t n);
SC_EXTERN void	sc_host_print_json(FILE *fp, const struct sc_host_thread *t,
		    size_t n);

/*
 * Snapshot every thread and print it with sc_host_print() to fp, with a
 * first line that says why (what, may be NULL).  Returns what
 * sc_host_snapshot() did (ENOSPC is not an error here: at most 4096
 * threads are printed, and the count of the others).
 */
SC_EXTERN int	sc_host_dump(FILE *fp, const char *what, long timeout_ns);

/*
 * For test authors: arm a watchdog that, when timeout_ns passes before
 * sc_host_watchdog_disarm(), dumps every thread to stderr with
 * sc_host_dump() and then calls abort(), so that the test fails with
 * where each thread was.  The environment variable STACKCAP_WATCHDOG
 * (seconds, decimals allowed) overrides timeout_ns: set it a few seconds
 * under ctest's TIMEOUT, which kills with SIGKILL (docs/host.md).  The
 * watchdog is a thread of its own that sleeps until the bound; arming
 * again moves the bound.  A bound that has passed is final: a disarm or
 * re-arm after it does not return, but waits for the dump and the abort
 * (the test overran, whichever thread the host ran first).  Call from any
 * thread but a signal handler.  Returns 0, EINVAL (timeout_ns <= 0 and no
 * STACKCAP_WATCHDOG), or pthread_create()'s error.
 */
SC_EXTERN int	sc_host_watchdog_arm(long timeout_ns);
SC_EXTERN void	sc_host_watchdog_disarm(void);

#ifdef __cplusplus
}
#endif

#endif /* !STACKCAP_HOST_H */
