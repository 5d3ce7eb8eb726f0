/*
 * The declarations the host_*.c files share (<stackcap/host.h>,
 * docs/host.md).  Kernel counterpart of the protocol: stack_save_td() and
 * stack_capture_intr() in sys/x86/x86/stack_machdep.c, as stack_machdep.c
 * mirrors them for the simulator; here the "CPU" a request goes to is a
 * host thread, and the IPI a real-time signal sent to it alone.
 *
 * Lock key of this file's structs: (r) written by the requester, under
 * sc_host_mtx, before the slot's tag opens, read by the handler after it
 * claimed the tag; (h) written by the handler that claimed the tag, read
 * by the requester after the tag says DONE (acquire); (a) atomic.
 */
#ifndef SC_HOST_VAR_H
#define SC_HOST_VAR_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <ucontext.h>

#include "sc_internal.h"
#include "stackcap/host.h"

/*
 * A slot's tag: SC_HTAG(seq, state).  seq is unique to the request in the
 * process (sc_host_seq), so that a signal meant for an earlier request, in
 * this array or in an older one, never matches.
 */
#define SC_HREQ_FREE	0x0	/* no request: usable */
#define SC_HREQ_OPEN	0x1	/* the requester waits; a handler may claim */
#define SC_HREQ_CLAIMED	0x2	/* a handler walks into hs_buf: not usable
				   until DONE, even after its requester left */
#define SC_HREQ_DONE	0x3	/* answered: usable again */
#define SC_HREQ_REVOKED	0x4	/* taken back unclaimed, its signal still to
				   come: not usable until the handler that
				   finds it marks it FREE, or the thread is
				   gone */
#define SC_HREQ_STATE	0x7
#define SC_HTAG(seq, state)	((uint64_t)(seq) << 3 | (state))

/* si_value of a request's signal: seq << SC_HIDX_BITS | slot index. */
#define SC_HIDX_BITS	20
#define SC_HIDX_MAX	((size_t)1 << SC_HIDX_BITS)

struct sc_host_slot {
	_Atomic uint64_t hs_req;	/* (a) tag */
	pid_t		hs_tid;		/* (r) the thread asked */
	pid_t		hs_answer;	/* (h) gettid() of the handler */
	char		hs_name[16];	/* (h) its name, PR_GET_NAME */
	uint64_t	hs_unwound;	/* (h) */
	struct sc_stack	hs_buf;		/* (h) */
};

/* An array of slots.  Never freed: a late handler may still hold one. */
struct sc_host_slots {
	size_t		hn;		/* (c) */
	struct sc_host_slots *hprev;	/* (r) the arrays it replaced */
	struct sc_host_slot hs[];
};

/* host_signal.c */
extern _Atomic(struct sc_host_slots *) sc__host_cur;
extern _Atomic uint32_t sc__host_answers;	/* futex: bumped per answer,
						   and per REVOKED freed */
extern _Atomic int32_t sc__host_waiting;	/* answers the requester
						   sleeps for, 0: awake */
extern _Atomic pid_t sc__host_pid;		/* the requests' sender */
extern _Atomic uint64_t sc__host_wrong;		/* answers from another tid */
extern _Atomic uint64_t sc__host_stale;		/* signals no request wanted */
extern void (*_Atomic sc__host_hook)(int);	/* tests: SC_HHOOK_* */
#define SC_HHOOK_ENTRY	0	/* the handler's first step, before a claim */
#define SC_HHOOK_CLAIMED 1	/* after the claim, before the walk */

int	sc__host_signal_ready(void);
bool	sc__host_in_handler(void);
void	sc__host_siginfo(siginfo_t *si, int signo);
int	sc__host_send(siginfo_t *si, pid_t tid, uint64_t value);

/* host_walk.c */
int	sc__host_walk_init(void);
void	sc__host_walk(const ucontext_t *uc, struct sc_stack *st,
	    uint64_t *unwound);
void	sc__host_walk_self(struct sc_stack *st, uint64_t *unwound);

#endif /* !SC_HOST_VAR_H */
