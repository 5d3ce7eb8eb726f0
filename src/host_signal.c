/*
 * <stackcap/host.h>'s signal: its choice, the setter, and the handler, the
 * host's stack_capture_intr().
 *
 * Kernel counterpart: stack_capture_intr() of sys/x86/x86/stack_machdep.c
 * (the IPI_TRACE handler that walks the interrupted thread and answers
 * through stack_intr_td), as src/stack_machdep.c mirrors it: here the
 * request names its slot in the signal's si_value, the handler claims the
 * slot's tag by compare-and-swap, walks into the slot (a library buffer),
 * and answers with its own tid, which the requester compares with the tid
 * it asked.  A handler that comes late finds its tag revoked and does
 * nothing; one that claimed in time but finishes late writes into a slot
 * that no later request uses until the handler marks it DONE.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "host_var.h"
#include "sc_futex.h"

_Atomic(struct sc_host_slots *) sc__host_cur;
_Atomic uint32_t sc__host_answers;
_Atomic int32_t sc__host_waiting;
_Atomic pid_t sc__host_pid;
_Atomic uint64_t sc__host_wrong;
_Atomic uint64_t sc__host_stale;
void (*_Atomic sc__host_hook)(int);

static _Atomic int sc_host_signo;		/* (a) 0: not chosen yet */
static pthread_mutex_t sc_host_sig_mtx = PTHREAD_MUTEX_INITIALIZER;
static __thread int sc_host_handling SC_TLS_IE;
/* Requests filed by nested entries of the handler, 0 for none.  Two at
 * most: one signal a thread is in flight at a time (host_snapshot.c). */
#define SC_HOST_NEST	4
static __thread _Atomic uint64_t sc_host_nested[SC_HOST_NEST] SC_TLS_IE;

static void
sc_host_call_hook(int where)
{
	void (*hook)(int) = atomic_load(&sc__host_hook);

	if (hook != NULL)
		hook(where);
}

/*
 * A slot changed.  An answer wakes the requester only when it is the last
 * one it waits for (sc__host_waiting counts them down): one futex call a
 * snapshot, not one a thread.  A REVOKED slot freed (taken, true) wakes
 * it whenever it sleeps: a request held behind that signal may go now.
 */
static void
sc_host_answered(bool taken)
{
	atomic_fetch_add(&sc__host_answers, 1);
	if (atomic_load(&sc__host_waiting) != 0 &&
	    (taken || atomic_fetch_sub(&sc__host_waiting, 1) <= 1))
		sc__futex_wake_raw(&sc__host_answers, 1);
}

bool
sc__host_in_handler(void)
{
	return (sc_host_handling != 0);
}

/* One request, the value of its signal: claim its slot, walk the
 * interrupted context into it, answer. */
static void
sc_host_answer(uint64_t v, void *ucv, pid_t self)
{
	struct sc_host_slots *a;
	struct sc_host_slot *s;
	uint64_t seq, want;
	size_t idx;

	sc_host_call_hook(SC_HHOOK_ENTRY);
	idx = (size_t)(v & (SC_HIDX_MAX - 1));
	seq = v >> SC_HIDX_BITS;
	a = atomic_load_explicit(&sc__host_cur, memory_order_acquire);
	if (a == NULL || idx >= a->hn)
		goto stale;
	s = &a->hs[idx];
	want = SC_HTAG(seq, SC_HREQ_OPEN);
	if (!atomic_compare_exchange_strong(&s->hs_req, &want,
	    SC_HTAG(seq, SC_HREQ_CLAIMED))) {
		/* Revoked: the requester left.  Say the signal came, so
		 * that the thread may be sent another. */
		want = SC_HTAG(seq, SC_HREQ_REVOKED);
		if (atomic_compare_exchange_strong(&s->hs_req, &want,
		    SC_HREQ_FREE))
			sc_host_answered(true);
		goto stale;
	}
	sc_host_call_hook(SC_HHOOK_CLAIMED);
	sc__host_walk(ucv, &s->hs_buf, &s->hs_unwound);
	if (syscall(SYS_prctl, PR_GET_NAME, s->hs_name, 0, 0, 0) != 0)
		s->hs_name[0] = '\0';
	s->hs_answer = self;
	if (s->hs_answer != s->hs_tid)
		atomic_fetch_add(&sc__host_wrong, 1);	/* never, by tgkill */
	atomic_store_explicit(&s->hs_req, SC_HTAG(seq, SC_HREQ_DONE),
	    memory_order_release);
	sc_host_answered(false);
	return;
stale:
	atomic_fetch_add(&sc__host_stale, 1);
}

/* Answer the requests filed by nested handlers: true if there was one. */
static bool
sc_host_drain(void *ucv, pid_t self)
{
	bool any = false;
	uint64_t v;
	int i;

	for (i = 0; i < SC_HOST_NEST; i++) {
		/* One instruction: a nested handler files whole or not. */
		v = atomic_exchange(&sc_host_nested[i], 0);
		if (v == 0)
			continue;
		sc_host_answer(v, ucv, self);
		any = true;
	}
	return (any);
}

/*
 * The handler.  Async-signal-safe: atomics, gettid and futex system
 * calls, the walk (host_walk.c: no lock of ours, no allocation); errno
 * saved.  A signal that is not one of our requests (another sender, or
 * the value of an older request) changes nothing.
 *
 * Installed with SA_NODEFER (sc_host_install()), it can be entered again
 * on the same thread while it runs.  A nested entry only files its
 * request in sc_host_nested and returns; the outer one answers what was
 * filed before it returns, from its own context (where the thread was:
 * it has not run since).  So handlers never pile up on a thread's stack
 * however many requests come while one finishes (one does, after each
 * answer wakes the requester: the futex call is where a thread is most
 * often preempted).  The last check for a filed request comes after
 * sc_host_handling is cleared: a request that comes after that is
 * answered by its own entry.
 */
static void
sc_host_handler(int signo, siginfo_t *si, void *ucv)
{
	uint64_t v, zero;
	pid_t self;
	int i, saved = errno;

	(void)signo;
	if (si->si_code != SI_QUEUE ||
	    si->si_pid != atomic_load(&sc__host_pid)) {
		atomic_fetch_add(&sc__host_stale, 1);
		errno = saved;
		return;
	}
	v = (uint64_t)(uintptr_t)si->si_value.sival_ptr;
	if (sc_host_handling != 0) {
		for (i = 0; i < SC_HOST_NEST; i++) {
			zero = 0;
			if (atomic_compare_exchange_strong(&sc_host_nested[i],
			    &zero, v))
				break;
		}
		if (i == SC_HOST_NEST)	/* never: one signal a thread */
			atomic_fetch_add(&sc__host_stale, 1);
		errno = saved;
		return;
	}
	self = (pid_t)syscall(SYS_gettid);
	do {
		sc_host_handling = 1;
		atomic_signal_fence(memory_order_seq_cst);
		sc_host_answer(v, ucv, self);
		while (sc_host_drain(ucv, self))
			;
		atomic_signal_fence(memory_order_seq_cst);
		sc_host_handling = 0;
		atomic_signal_fence(memory_order_seq_cst);
		v = 0;
		for (i = 0; i < SC_HOST_NEST && v == 0; i++)
			v = atomic_exchange(&sc_host_nested[i], 0);
	} while (v != 0);
	errno = saved;
}

static bool
sc_host_is_ours(const struct sigaction *sa)
{
	return ((sa->sa_flags & SA_SIGINFO) != 0 &&
	    sa->sa_sigaction == sc_host_handler);
}

/* Install the handler on signo unless the program has one there.
 * sc_host_sig_mtx held. */
static int
sc_host_install(int signo)
{
	struct sigaction sa, old;

	if (sigaction(signo, NULL, &old) != 0)
		return (errno);
	if (sc_host_is_ours(&old))
		return (0);
	if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL)
		return (EBUSY);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sc_host_handler;
	/*
	 * SA_NODEFER: the kernel does not add the signal to the mask while
	 * the handler runs, so SigBlk in /proc/self/task/TID/status is the
	 * program's own mask, and a thread that is answering (or about to:
	 * its signal dequeued, its handler not yet entered) is never judged
	 * BLOCKED.  The handler files a nested request for the outer one
	 * to answer (sc_host_handler()).
	 */
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(signo, &sa, NULL) != 0)
		return (errno);
	return (0);
}

int
sc_host_set_signal(int signo)
{
	int error;

	if (signo < SIGRTMIN || signo > SIGRTMAX)
		return (EINVAL);
	pthread_mutex_lock(&sc_host_sig_mtx);
	error = sc_host_install(signo);
	if (error == 0)
		atomic_store(&sc_host_signo, signo);
	pthread_mutex_unlock(&sc_host_sig_mtx);
	return (error);
}

int
sc_host_signal(void)
{
	return (atomic_load(&sc_host_signo));
}

/*
 * The signal for a request, chosen and installed at first use; EBUSY when
 * the program replaced our handler since (never taken back from it).
 * Returns the signal, or a negative errno.
 */
int
sc__host_signal_ready(void)
{
	struct sigaction old;
	int signo, error = EBUSY;

	pthread_mutex_lock(&sc_host_sig_mtx);
	signo = atomic_load(&sc_host_signo);
	if (signo != 0) {
		if (sigaction(signo, NULL, &old) != 0 || !sc_host_is_ours(&old))
			signo = 0;
		pthread_mutex_unlock(&sc_host_sig_mtx);
		return (signo != 0 ? signo : -EBUSY);
	}
	for (signo = SIGRTMAX; signo >= SIGRTMIN + 4; signo--) {
		error = sc_host_install(signo);
		if (error == 0)
			break;
	}
	if (error == 0)
		atomic_store(&sc_host_signo, signo);
	pthread_mutex_unlock(&sc_host_sig_mtx);
	return (error == 0 ? signo : -error);
}

/* The signal of a call's requests, but their value; sets sc__host_pid
 * for the handler's check of the sender. */
void
sc__host_siginfo(siginfo_t *si, int signo)
{
	memset(si, 0, sizeof(*si));
	si->si_signo = signo;
	si->si_code = SI_QUEUE;
	si->si_pid = getpid();
	si->si_uid = getuid();
	atomic_store(&sc__host_pid, si->si_pid);
}

/*
 * One request's signal to one thread alone, si from sc__host_siginfo():
 * to the thread of this process whose tid is tid (the kernel refuses a
 * tid outside si_pid's thread group, as tgkill() does).  0, or errno
 * (ESRCH: no such thread of ours; EAGAIN: the queue of pending signals is
 * full).
 */
int
sc__host_send(siginfo_t *si, pid_t tid, uint64_t value)
{
	si->si_value.sival_ptr = (void *)(uintptr_t)value;
	return (syscall(SYS_rt_tgsigqueueinfo, si->si_pid, tid, si->si_signo,
	    si) != 0 ? errno : 0);
}
