/*
 * sc_host_snapshot() and sc_host_capture(): the host's stack_save_td(),
 * every thread's request in flight at once.
 *
 * Kernel counterpart: stack_save_td() of sys/x86/x86/stack_machdep.c (one
 * request, one IPI, the answer checked against the thread asked) and
 * sysctl_kern_proc_kstack() of sys/kern/kern_proc.c (every thread of a
 * process).  Beyond the kernel: the whole call is bounded, and a thread
 * that does not answer gets a verdict read from /proc, never guessed
 * (docs/host.md, "The protocol").
 *
 * Proof of identity.  A request is sent by rt_tgsigqueueinfo() to the
 * tid within this process's thread group: the kernel resolves the tid to
 * a thread of ours at the send (ESRCH for none, or another process's) and
 * queues the signal on that thread alone, where no other thread can take
 * it.  The handler claims the request's tag, which names this request
 * only, and answers with gettid(), which can differ from the tid asked
 * only by a bug (sc__host_wrong counts it).  So the answer is the stack
 * of the thread that had the tid when it was asked.  No /proc read a
 * thread: the name comes with the answer (the handler's PR_GET_NAME).
 *
 * No proof can tie the answer to the listing: /proc/self/task gives tids
 * with no generation, so a thread that exited after the listing and
 * whose tid a new thread took before the request is answered for by the
 * new thread.  A pidfd of the thread (PIDFD_THREAD, Linux 6.9), used
 * here before, pins the thread at its open instead of at the send, a few
 * microseconds earlier, no closer to the listing, for three more system
 * calls a thread (the open, a lookup that the thread is ours, the close).
 *
 * STACKCAP_HOST_PROOF=stat adds the start time (field 22 of
 * /proc/self/task/TID/stat), read before the signal and again when the
 * answer is taken: equal, the thread that answered still lives when its
 * stack is copied out.  Unequal, the answer is dropped and the verdict
 * is EXITED.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "host_var.h"
#include "sc_futex.h"

#define SC_HV_PENDING	(-1)

#if defined(SC_SANITIZER_THREAD)
#define SC_HOST_TSAN	1
#else
#define SC_HOST_TSAN	0
#endif

struct sc_host_req {
	pid_t		hr_tid;
	int		hr_verdict;	/* SC_HOST_*, or SC_HV_PENDING */
	uint64_t	hr_gen;		/* start time, from stat; 0: unread */
	uint64_t	hr_seq;
	size_t		hr_slot;
	struct sc_host_slot *hr_wslot;	/* held: sent once this slot's */
	uint64_t	hr_wtag;	/* tag is no longer hr_wtag */
	char		hr_name[16];
	struct sc_stack	*hr_st;		/* where the answer goes */
	uint64_t	*hr_unwound;
};

/* What one call's steps share. */
struct sc_host_call {
	int		hc_dirfd;	/* /proc/self/task */
	int		hc_signo;
	bool		hc_stat;	/* sc_host_stat_proof() */
	siginfo_t	hc_si;		/* sc__host_siginfo() */
	struct sc_host_slots *hc_slots;
};

/* Serialises the requesters: sc__host_cur's arrays, sc_host_seq. */
static pthread_mutex_t sc_host_mtx = PTHREAD_MUTEX_INITIALIZER;
static uint64_t sc_host_seq;			/* (r) */

/*
 * Threads a signal of ours may still come to: a request taken back
 * before a handler claimed it (its slot REVOKED), or claimed and not
 * done when its call ended (CLAIMED).  No second signal goes to such a
 * thread until the slot's tag moves on: a second would run the handler
 * nested in the first (SA_NODEFER, host_signal.c), and a thread that
 * blocks the signal would have one more queued at each call.  ho_tag is
 * the slot's tag while the signal is still to come.  (r)
 */
struct sc_host_out {
	pid_t		ho_tid;
	uint64_t	ho_gen;
	struct sc_host_slot *ho_slot;
	uint64_t	ho_tag;
};
static struct sc_host_out *sc_host_outs;	/* (r) */
static size_t sc_host_nout, sc_host_capout;	/* (r) */

static int
sc_host_lock(uint64_t deadline)
{
	struct timespec ts;
	uint64_t now = sc_now_ns(), left;

	if (pthread_mutex_trylock(&sc_host_mtx) == 0)
		return (0);
	left = deadline > now ? deadline - now : 0;
	/* timedlock's clock is CLOCK_REALTIME (and what TSan intercepts). */
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(left / 1000000000u);
	ts.tv_nsec += (long)(left % 1000000000u);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return (pthread_mutex_timedlock(&sc_host_mtx, &ts) == 0 ? 0 :
	    EAGAIN);
}

/* /proc/self/task/TID/<file> into buf, NUL-terminated: its length, or -1
 * when the thread is gone. */
static ssize_t
sc_host_read(int dirfd, pid_t tid, const char *file, char *buf, size_t len)
{
	char path[48];
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "%d/%s", (int)tid, file);
	if ((fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC)) < 0)
		return (-1);
	r = read(fd, buf, len - 1);
	close(fd);
	if (r < 0)
		return (-1);
	buf[r] = '\0';
	return (r);
}

/* The start time (field 22 of stat) and the name: 0, or ESRCH. */
static int
sc_host_stat(int dirfd, pid_t tid, uint64_t *gen, char *name)
{
	char buf[1024], *open, *close, *p;
	size_t len;
	int field;

	if (sc_host_read(dirfd, tid, "stat", buf, sizeof(buf)) <= 0 ||
	    (open = strchr(buf, '(')) == NULL ||
	    (close = strrchr(buf, ')')) == NULL || close < open)
		return (ESRCH);
	if (name != NULL) {
		len = (size_t)(close - open - 1);
		if (len > 15)
			len = 15;
		memcpy(name, open + 1, len);
		name[len] = '\0';
	}
	/* After ") " come the fields from 3 (state) on.  A zombie (an
	 * exited main thread whose others live on) answers no signal. */
	if (close[1] != ' ' || close[2] == 'Z' || close[2] == 'X')
		return (ESRCH);
	for (p = close + 2, field = 3; field < 22 && p != NULL; field++) {
		p = strchr(p, ' ');
		if (p != NULL)
			p++;
	}
	if (p == NULL)
		return (ESRCH);
	*gen = strtoull(p, NULL, 10);
	return (0);
}

/* The mask's bit of signo in a line "\nName:\t<hex>" of status: 1, 0, or
 * -1 when the line is not there. */
static int
sc_host_sigbit(const char *status, const char *line, int signo)
{
	const char *p = strstr(status, line);

	if (p == NULL)
		return (-1);
	return ((strtoull(p + strlen(line), NULL, 16) >> (signo - 1) & 1) != 0);
}

/* SigBlk and SigPnd of the thread's status, for signo (the kernel reads
 * both in one go): 0, or -1 when the thread is gone. */
static int
sc_host_sigstate(int dirfd, pid_t tid, int signo, int *blk, int *pnd)
{
	char buf[2048];

	if (sc_host_read(dirfd, tid, "status", buf, sizeof(buf)) <= 0 ||
	    (*blk = sc_host_sigbit(buf, "\nSigBlk:", signo)) < 0 ||
	    (*pnd = sc_host_sigbit(buf, "\nSigPnd:", signo)) < 0)
		return (-1);
	return (0);
}

/*
 * Is the thread BLOCKED: does its own mask block signo while a signal of
 * ours waits for it?  The mask is the program's alone (SA_NODEFER,
 * host_signal.c), and a signal not pending (taken, its handler about to
 * run) is no block, whatever the mask says since.  1, 0, or -1 when the
 * thread is gone.
 */
static int
sc_host_blocked(int dirfd, pid_t tid, int signo)
{
	int blk, pnd;

	if (sc_host_sigstate(dirfd, tid, signo, &blk, &pnd) != 0)
		return (-1);
	return (blk && pnd);
}

/* Is the signal of o still to come? */
static bool
sc_host_out_waits(const struct sc_host_out *o)
{
	return (atomic_load_explicit(&o->ho_slot->hs_req,
	    memory_order_acquire) == o->ho_tag);
}

/* Remember that the signal of rq's slot s may still come (s holds tag).
 * Without memory, or with the thread gone, nothing is remembered: a
 * second signal may then come while the first still waits. */
static void
sc_host_out_add(struct sc_host_req *rq, struct sc_host_slot *s,
    uint64_t tag, int dirfd)
{
	struct sc_host_out *no;
	size_t cap;

	if (rq->hr_gen == 0 &&
	    sc_host_stat(dirfd, rq->hr_tid, &rq->hr_gen, NULL) != 0)
		return;
	if (sc_host_nout == sc_host_capout) {
		cap = sc_host_capout != 0 ? 2 * sc_host_capout : 16;
		no = realloc(sc_host_outs, cap * sizeof(*no));
		if (no == NULL)
			return;
		sc_host_outs = no;
		sc_host_capout = cap;
	}
	no = &sc_host_outs[sc_host_nout++];
	no->ho_tid = rq->hr_tid;
	no->ho_gen = rq->hr_gen;
	no->ho_slot = s;
	no->ho_tag = tag;
}

/*
 * Forget the signals that came, those of threads gone, and those no
 * longer pending that no handler claimed: taken by a handler about to
 * find its tag, or gone with a thread whose tid another took.  A REVOKED
 * slot forgotten is freed: a handler that comes late for it finds
 * another tag and does nothing.  Not under TSan: it takes a signal into
 * a queue of its own and runs the handler later with every signal
 * blocked, so a second signal sent meanwhile would read as blocked.
 */
static void
sc_host_out_prune(int dirfd, int signo)
{
	struct sc_host_out *o;
	uint64_t gen, want;
	size_t i = 0;
	int blk, pnd;

	while (i < sc_host_nout) {
		o = &sc_host_outs[i];
		if (sc_host_out_waits(o) &&
		    sc_host_stat(dirfd, o->ho_tid, &gen, NULL) == 0 &&
		    gen == o->ho_gen &&
		    ((o->ho_tag & SC_HREQ_STATE) == SC_HREQ_CLAIMED ||
		    SC_HOST_TSAN ||
		    (sc_host_sigstate(dirfd, o->ho_tid, signo, &blk,
		    &pnd) == 0 && pnd))) {
			i++;
			continue;
		}
		want = o->ho_tag;
		if ((want & SC_HREQ_STATE) == SC_HREQ_REVOKED)
			atomic_compare_exchange_strong(&o->ho_slot->hs_req,
			    &want, SC_HREQ_FREE);
		*o = sc_host_outs[--sc_host_nout];
	}
}

/* The signal still to come to rq's thread, or NULL.  A thread whose
 * start time was not read has it read here, if its tid has one. */
static const struct sc_host_out *
sc_host_out_of(struct sc_host_req *rq, int dirfd)
{
	size_t i;

	for (i = 0; i < sc_host_nout; i++) {
		if (sc_host_outs[i].ho_tid != rq->hr_tid)
			continue;
		if (rq->hr_gen == 0 &&
		    sc_host_stat(dirfd, rq->hr_tid, &rq->hr_gen, NULL) != 0)
			return (NULL);
		if (sc_host_outs[i].ho_gen == rq->hr_gen)
			return (&sc_host_outs[i]);
	}
	return (NULL);
}

/*
 * n usable slots: FREE or DONE ones of the current array, or a new array
 * (twice as large, or more) whose predecessor is kept for the handlers
 * that may still hold it.  sc_host_mtx held.
 */
static struct sc_host_slots *
sc_host_slots(size_t n, size_t *idx)
{
	struct sc_host_slots *a, *na;
	size_t i, k, cap;
	uint64_t st;

	a = atomic_load(&sc__host_cur);
	for (k = 0, i = 0; a != NULL && i < a->hn && k < n; i++) {
		st = atomic_load(&a->hs[i].hs_req) & SC_HREQ_STATE;
		if (st == SC_HREQ_FREE || st == SC_HREQ_DONE)
			idx[k++] = i;
	}
	if (k == n)
		return (a);
	cap = a != NULL ? 2 * a->hn : 64;
	if (cap < 2 * n)
		cap = 2 * n;
	if (cap > SC_HIDX_MAX)
		return (NULL);
	na = calloc(1, sizeof(*na) + cap * sizeof(na->hs[0]));
	if (na == NULL)
		return (NULL);
	na->hn = cap;
	na->hprev = a;
	for (i = 0; i < n; i++)
		idx[i] = i;
	atomic_store_explicit(&sc__host_cur, na, memory_order_release);
	return (na);
}

/* Take back an open request, to FREE (its signal will not come) or
 * REVOKED (it may): true, or false when a handler claimed it. */
static bool
sc_host_revoke(struct sc_host_slot *s, uint64_t seq, uint64_t to)
{
	uint64_t want = SC_HTAG(seq, SC_HREQ_OPEN);

	return (atomic_compare_exchange_strong(&s->hs_req, &want,
	    to == SC_HREQ_FREE ? to : SC_HTAG(seq, to)));
}

/*
 * STACKCAP_HOST_PROOF=stat in the environment: the start time is read
 * before each signal and when its answer is taken (the tests run both).
 * Asked once.  sc_host_mtx held.
 */
static bool
sc_host_stat_proof(void)
{
	static int on = -1;		/* (r) */
	const char *env;

	if (on < 0) {
		env = getenv("STACKCAP_HOST_PROOF");
		on = env != NULL && strcmp(env, "stat") == 0;
	}
	return (on != 0);
}

/*
 * Open rq's slot and send its signal to the tid (with its start time read
 * before, under the stat proof).
 */
static void
sc_host_send_req(struct sc_host_req *rq, struct sc_host_call *c)
{
	struct sc_host_slot *s = &c->hc_slots->hs[rq->hr_slot];
	int error;

	rq->hr_wslot = NULL;
	if (c->hc_stat && rq->hr_gen == 0 && sc_host_stat(c->hc_dirfd,
	    rq->hr_tid, &rq->hr_gen, NULL) != 0) {
		rq->hr_verdict = SC_HOST_EXITED;
		return;
	}
	s->hs_tid = rq->hr_tid;
	atomic_store_explicit(&s->hs_req, SC_HTAG(rq->hr_seq, SC_HREQ_OPEN),
	    memory_order_release);
	error = sc__host_send(&c->hc_si, rq->hr_tid,
	    rq->hr_seq << SC_HIDX_BITS | rq->hr_slot);
	if (error != 0) {
		/* ESRCH: gone; EAGAIN: the signal queue is full. */
		sc_host_revoke(s, rq->hr_seq, SC_HREQ_FREE);
		rq->hr_verdict = error == ESRCH ? SC_HOST_EXITED :
		    SC_HOST_TIMEDOUT;
	}
}

/*
 * An answered request: proven, copied out, or dropped (EXITED).  Under
 * the stat proof, the thread must still have the start time read before
 * the signal.  The name is the handler's: the one the thread had when it
 * was walked.
 */
static void
sc_host_take(struct sc_host_req *rq, struct sc_host_slot *s,
    const struct sc_host_call *c)
{
	uint64_t gen;

	if (s->hs_answer != rq->hr_tid || (c->hc_stat &&
	    (sc_host_stat(c->hc_dirfd, rq->hr_tid, &gen, NULL) != 0 ||
	    gen != rq->hr_gen))) {
		rq->hr_verdict = SC_HOST_EXITED;
		return;
	}
	memcpy(rq->hr_name, s->hs_name, sizeof(rq->hr_name));
	rq->hr_name[sizeof(rq->hr_name) - 1] = '\0';
	sc_stack_copy(&s->hs_buf, rq->hr_st);
	*rq->hr_unwound = rq->hr_st->depth > 0 ? s->hs_unwound : 0;
	rq->hr_verdict = rq->hr_st->depth > 0 ? SC_HOST_OK : SC_HOST_EMPTY;
}

/* Collect the answers come so far, and send the held requests whose
 * thread's earlier signal came; the count still pending. */
static size_t
sc_host_collect(struct sc_host_req *rq, size_t nrq, struct sc_host_call *c)
{
	struct sc_host_slots *a = c->hc_slots;
	size_t i, pending = 0;
	uint64_t tag;

	for (i = 0; i < nrq; i++) {
		if (rq[i].hr_verdict != SC_HV_PENDING)
			continue;
		if (rq[i].hr_wslot != NULL) {
			tag = atomic_load_explicit(&rq[i].hr_wslot->hs_req,
			    memory_order_acquire);
			if (tag != rq[i].hr_wtag)
				sc_host_send_req(&rq[i], c);
			if (rq[i].hr_verdict == SC_HV_PENDING)
				pending++;
			continue;
		}
		tag = atomic_load_explicit(&a->hs[rq[i].hr_slot].hs_req,
		    memory_order_acquire);
		if (tag == SC_HTAG(rq[i].hr_seq, SC_HREQ_DONE))
			sc_host_take(&rq[i], &a->hs[rq[i].hr_slot], c);
		else
			pending++;
	}
	return (pending);
}

/*
 * Wait for answers until none is pending or until `until`.  Asleep, it
 * is woken by the last answer it waits for (sc__host_waiting, host_signal.c)
 * or by any answer that came since `seen`: a count that is off by a late
 * handler of an earlier call only wakes it early.
 */
static void
sc_host_wait(struct sc_host_req *rq, size_t nrq, struct sc_host_call *c,
    uint64_t until)
{
	uint64_t now;
	uint32_t seen;
	size_t pending;

	for (;;) {
		seen = atomic_load(&sc__host_answers);
		if ((pending = sc_host_collect(rq, nrq, c)) == 0)
			return;
		now = sc_now_ns();
		if (now >= until)
			return;
		atomic_store(&sc__host_waiting, (int32_t)pending);
		sc__futex_wait_raw(&sc__host_answers, seen,
		    (long)(until - now));
		atomic_store(&sc__host_waiting, 0);
	}
}

/*
 * A request still pending: revoke it and read its verdict from /proc
 * (final), or leave it to wait more (a handler claimed it; final only
 * at the bound, TIMEDOUT).  With final false, only a blocked or an
 * exited thread gets its verdict.  A request held behind an earlier
 * signal was never sent: that signal is what the thread blocks.
 */
static void
sc_host_judge(struct sc_host_req *rq, struct sc_host_call *c, bool final)
{
	struct sc_host_slot *s = &c->hc_slots->hs[rq->hr_slot];
	uint64_t want;
	int b;

	b = sc_host_blocked(c->hc_dirfd, rq->hr_tid, c->hc_signo);
	if (!final && b == 0)
		return;
	if (rq->hr_wslot != NULL) {
		rq->hr_verdict = b < 0 ? SC_HOST_EXITED : b > 0 ?
		    SC_HOST_BLOCKED : SC_HOST_TIMEDOUT;
		return;
	}
	if (!sc_host_revoke(s, rq->hr_seq, SC_HREQ_REVOKED)) {
		/* Claimed: DONE by now, or a handler still walks. */
		if (atomic_load_explicit(&s->hs_req, memory_order_acquire) ==
		    SC_HTAG(rq->hr_seq, SC_HREQ_DONE))
			sc_host_take(rq, s, c);
		else if (final) {
			rq->hr_verdict = SC_HOST_TIMEDOUT;
			sc_host_out_add(rq, s,
			    SC_HTAG(rq->hr_seq, SC_HREQ_CLAIMED), c->hc_dirfd);
		}
		return;
	}
	rq->hr_verdict = b < 0 ? SC_HOST_EXITED : b > 0 ? SC_HOST_BLOCKED :
	    SC_HOST_TIMEDOUT;
	want = SC_HTAG(rq->hr_seq, SC_HREQ_REVOKED);
	if (b < 0)		/* gone: no handler comes */
		atomic_compare_exchange_strong(&s->hs_req, &want,
		    SC_HREQ_FREE);
	else
		sc_host_out_add(rq, s, want, c->hc_dirfd);
}

/* Every request of rq[0..nrq): sent at once (or once the thread's earlier
 * signal came), answered or judged by the deadline.  sc_host_mtx held. */
static int
sc_host_run(struct sc_host_req *rq, size_t nrq, int dirfd, int signo,
    uint64_t deadline)
{
	const struct sc_host_out *o;
	struct sc_host_call c;
	size_t i, k, *idx;
	uint64_t now, grace, gen;
	pid_t self = (pid_t)syscall(SYS_gettid);

	if (nrq == 0)
		return (0);
	if ((idx = calloc(nrq + 1, sizeof(*idx))) == NULL)
		return (ENOMEM);
	if ((c.hc_slots = sc_host_slots(nrq, idx)) == NULL) {
		free(idx);
		return (ENOMEM);
	}
	c.hc_dirfd = dirfd;
	c.hc_signo = signo;
	c.hc_stat = sc_host_stat_proof();
	sc__host_siginfo(&c.hc_si, signo);
	sc_host_out_prune(dirfd, signo);
	for (i = 0, k = 0; i < nrq; i++) {
		if (rq[i].hr_tid == self) {
			sc__host_walk_self(rq[i].hr_st, rq[i].hr_unwound);
			(void)prctl(PR_GET_NAME, rq[i].hr_name, 0, 0, 0);
			rq[i].hr_verdict = SC_HOST_SELF;
			continue;
		}
		/* The main thread may be a zombie that lives on as the
		 * process's tid (it exited, the others did not): the stat
		 * says so, and a signal to it would never be taken. */
		if ((c.hc_stat || rq[i].hr_tid == c.hc_si.si_pid) &&
		    sc_host_stat(dirfd, rq[i].hr_tid, &rq[i].hr_gen,
		    NULL) != 0) {
			rq[i].hr_verdict = SC_HOST_EXITED;
			continue;
		}
		rq[i].hr_slot = idx[k++];
		rq[i].hr_seq = ++sc_host_seq;
		if ((o = sc_host_out_of(&rq[i], dirfd)) != NULL) {
			rq[i].hr_wslot = o->ho_slot;
			rq[i].hr_wtag = o->ho_tag;
			continue;
		}
		sc_host_send_req(&rq[i], &c);
	}
	free(idx);
	/*
	 * Most answers come within microseconds; then the mask of those
	 * that did not is read, so that a blocked thread costs no more than
	 * this grace, and the rest wait until the bound.
	 */
	now = sc_now_ns();
	grace = now + (deadline - now) / 8;
	if (grace > now + 2000000)
		grace = now + 2000000;
	sc_host_wait(rq, nrq, &c, grace);
	for (i = 0; i < nrq; i++)
		if (rq[i].hr_verdict == SC_HV_PENDING)
			sc_host_judge(&rq[i], &c, false);
	sc_host_wait(rq, nrq, &c, deadline);
	for (i = 0; i < nrq; i++)
		if (rq[i].hr_verdict == SC_HV_PENDING)
			sc_host_judge(&rq[i], &c, true);
	/* Since glibc 2.34 (its bug 12889) a thread blocks every signal in
	 * its last steps of exiting: one that is gone by now is EXITED. */
	for (i = 0; i < nrq; i++)
		if (rq[i].hr_verdict == SC_HOST_BLOCKED &&
		    (sc_host_stat(dirfd, rq[i].hr_tid, &gen, NULL) != 0 ||
		    gen != rq[i].hr_gen))
			rq[i].hr_verdict = SC_HOST_EXITED;
	/* The name of a thread that did not answer, from its comm. */
	for (i = 0; i < nrq; i++)
		if (rq[i].hr_name[0] == '\0' &&
		    rq[i].hr_verdict != SC_HOST_EXITED)
			(void)sc_host_stat(dirfd, rq[i].hr_tid, &gen,
			    rq[i].hr_name);
	return (0);
}

/* The checks, the signal, the walker, the lock: 0 with sc_host_mtx held
 * and *signop set, or an errno. */
static int
sc_host_begin(long timeout_ns, uint64_t *deadline, int *signop)
{
	int signo, error;

	if (timeout_ns <= 0)
		return (EINVAL);
	if (sc__host_in_handler())
		return (EDEADLK);
	*deadline = sc_now_ns() + (uint64_t)timeout_ns;
	if ((error = sc_host_lock(*deadline)) != 0)
		return (error);
	if ((signo = sc__host_signal_ready()) < 0) {
		pthread_mutex_unlock(&sc_host_mtx);
		return (-signo);
	}
	if ((error = sc__host_walk_init()) != 0) {
		pthread_mutex_unlock(&sc_host_mtx);
		return (error);
	}
	*signop = signo;
	return (0);
}

/* The tids of /proc/self/task, up to cap into tids; the total count. */
static size_t
sc_host_list(int dirfd, pid_t *tids, size_t cap)
{
	struct dirent *de;
	size_t n = 0;
	DIR *d;
	int fd;

	if ((fd = dup(dirfd)) < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return (0);
	}
	/* The copy shares dirfd's offset, at the end after a first pass. */
	rewinddir(d);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		if (n < cap)
			tids[n] = (pid_t)atoi(de->d_name);
		n++;
	}
	closedir(d);
	return (n);
}

int
sc_host_snapshot(struct sc_host_thread *out, size_t max, size_t *n,
    long timeout_ns)
{
	struct sc_host_req *rq = NULL;
	pid_t *tids = NULL;
	size_t i, cap, total, nrq;
	uint64_t deadline;
	int dirfd, signo, error;

	if (n == NULL || (out == NULL && max > 0))
		return (EINVAL);
	*n = 0;
	if ((error = sc_host_begin(timeout_ns, &deadline, &signo)) != 0)
		return (error);
	if ((dirfd = open("/proc/self/task", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) < 0) {
		error = errno;
		goto out;
	}
	for (cap = 256;; cap = total + 64) {
		free(tids);
		if ((tids = calloc(cap, sizeof(*tids))) == NULL) {
			error = ENOMEM;
			goto out;
		}
		if ((total = sc_host_list(dirfd, tids, cap)) <= cap)
			break;
	}
	nrq = total < max ? total : max;
	if ((rq = calloc(nrq + 1, sizeof(*rq))) == NULL) {
		error = ENOMEM;
		goto out;
	}
	for (i = 0; i < nrq; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].tid = rq[i].hr_tid = tids[i];
		rq[i].hr_verdict = SC_HV_PENDING;
		rq[i].hr_st = &out[i].stack;
		rq[i].hr_unwound = &out[i].unwound;
	}
	error = sc_host_run(rq, nrq, dirfd, signo, deadline);
	for (i = 0; i < nrq && error == 0; i++) {
		out[i].verdict = rq[i].hr_verdict;
		memcpy(out[i].name, rq[i].hr_name, sizeof(out[i].name));
		if (rq[i].hr_verdict != SC_HOST_OK &&
		    rq[i].hr_verdict != SC_HOST_SELF) {
			out[i].stack.depth = 0;
			out[i].unwound = 0;
		}
	}
	*n = total;
	if (error == 0 && total > max)
		error = ENOSPC;
out:
	if (dirfd >= 0)
		close(dirfd);
	free(rq);
	free(tids);
	pthread_mutex_unlock(&sc_host_mtx);
	return (error);
}

int
sc_host_capture(pid_t tid, struct sc_stack *st, long timeout_ns)
{
	struct sc_host_req rq;
	uint64_t deadline, unwound, gen;
	int dirfd, signo, error;

	if (st == NULL || tid <= 0)
		return (-EINVAL);
	st->depth = 0;
	if ((error = sc_host_begin(timeout_ns, &deadline, &signo)) != 0)
		return (-error);
	if ((dirfd = open("/proc/self/task", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) < 0) {
		error = -errno;
		goto out;
	}
	if (sc_host_stat(dirfd, tid, &gen, NULL) != 0) {
		error = -ESRCH;		/* not ours, or no such thread */
		goto out;
	}
	memset(&rq, 0, sizeof(rq));
	rq.hr_tid = tid;
	rq.hr_verdict = SC_HV_PENDING;
	rq.hr_st = st;
	rq.hr_unwound = &unwound;
	error = sc_host_run(&rq, 1, dirfd, signo, deadline);
	if (error != 0)
		error = -error;
	else
		error = rq.hr_verdict;
	if (error != SC_HOST_OK && error != SC_HOST_SELF)
		st->depth = 0;
out:
	if (dirfd >= 0)
		close(dirfd);
	pthread_mutex_unlock(&sc_host_mtx);
	return (error);
}

const char *
sc_host_verdict_name(int verdict)
{
	static const char *const names[] = { "ok", "empty", "blocked",
	    "exited", "timedout", "self" };

	if (verdict < 0 || verdict > SC_HOST_SELF)
		return ("?");
	return (names[verdict]);
}
