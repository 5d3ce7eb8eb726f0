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
#include <sys/syscall.h>
#include <unistd.h>

#include "host_var.h"
#include "sc_futex.h"

_Atomic(struct sc_host_slots *) sc__host_cur;
_Atomic uint32_t sc__host_answers;
_Atomic uint32_t sc__host_waiting;
_Atomic uint64_t sc__host_wrong;
_Atomic uint64_t sc__host_stale;
void (*_Atomic sc__host_hook)(void);

static _Atomic int sc_host_signo;		/* (a) 0: not chosen yet */
static pthread_mutex_t sc_host_sig_mtx = PTHREAD_MUTEX_INITIALIZER;
static __thread int sc_host_handling SC_TLS_IE;

bool
sc__host_in_handler(void)
{
	return (sc_host_handling != 0);
}

/*
 * The handler.  Async-signal-safe: atomics, gettid and futex system
 * calls, the walk (host_walk.c: no lock of ours, no allocation); errno
 * saved.  A signal that is not one of our requests (another sender, or
 * the value of an older request) changes nothing.
 */
static void
sc_host_handler(int signo, siginfo_t *si, void *ucv)
{
	struct sc_host_slots *a;
	struct sc_host_slot *s;
	void (*hook)(void);
	uint64_t v, seq, want;
	size_t idx;
	int saved = errno;

	(void)signo;
	if (si->si_code != SI_QUEUE || si->si_pid != getpid())
		goto stale;
	v = (uint64_t)(uintptr_t)si->si_value.sival_ptr;
	idx = (size_t)(v & (SC_HIDX_MAX - 1));
	seq = v >> SC_HIDX_BITS;
	a = atomic_load_explicit(&sc__host_cur, memory_order_acquire);
	if (a == NULL || idx >= a->hn)
		goto stale;
	s = &a->hs[idx];
	want = seq << 2 | SC_HREQ_OPEN;
	if (!atomic_compare_exchange_strong(&s->hs_req, &want,
	    seq << 2 | SC_HREQ_CLAIMED))
		goto stale;		/* revoked: the requester left */
	sc_host_handling = 1;
	hook = atomic_load(&sc__host_hook);
	if (hook != NULL)
		hook();
	sc__host_walk(ucv, &s->hs_buf, &s->hs_unwound);
	s->hs_answer = (pid_t)syscall(SYS_gettid);
	if (s->hs_answer != s->hs_tid)
		atomic_fetch_add(&sc__host_wrong, 1);	/* never, by tgkill */
	atomic_store_explicit(&s->hs_req, seq << 2 | SC_HREQ_DONE,
	    memory_order_release);
	atomic_fetch_add(&sc__host_answers, 1);
	if (atomic_load(&sc__host_waiting) != 0)
		sc__futex_wake_raw(&sc__host_answers, 1);
	sc_host_handling = 0;
	errno = saved;
	return;
stale:
	atomic_fetch_add(&sc__host_stale, 1);
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
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
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

/* One request's signal to tid alone: 0, or errno (ESRCH: gone; EAGAIN:
 * the queue of pending signals is full). */
int
sc__host_send(pid_t tid, int signo, uint64_t value)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = signo;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_ptr = (void *)(uintptr_t)value;
	if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, signo, &si) != 0)
		return (errno);
	return (0);
}
