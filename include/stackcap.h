/*
 * stackcap: the FreeBSD amd64 protocol for capturing the kernel stack of a
 * thread that may be running right now, reproduced in userspace.
 *
 * Kernel counterparts: sys/sys/stack.h (struct stack, stack_*),
 * sys/x86/x86/stack_machdep.c (stack_save, stack_save_td, stack_capture),
 * sys/sys/proc.h (struct thread states and inhibitors), sys/sys/user.h
 * (struct kinfo_kstack, KKST_STATE_*).  docs/protocol.md maps every name.
 *
 * Conventions:
 * - Functions that can fail return 0 or a positive errno value; they never
 *   set errno.
 * - Misuse (a lock not held, a swapped thread...) is a KASSERT: the panic
 *   handler (sc_set_panic_handler) is called with a message naming the
 *   function, the condition and the thread.
 * - "Context" on each function says who may call it: a simulated thread (code
 *   running under sc_thread_create), a plain pthread (any thread that is not
 *   a simulated thread), a signal handler.
 */
#ifndef STACKCAP_H
#define STACKCAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(SC_BUILDING_LIBRARY)
#define SC_EXTERN __attribute__((visibility("default")))
#else
#define SC_EXTERN
#endif

/* ------------------------------------------------------------------------
 * Stacks (sys/sys/stack.h, sys/kern/subr_stack.c)
 * ------------------------------------------------------------------------ */

#define SC_STACK_MAX	64		/* FreeBSD's STACK_MAX is 18 */

/* A captured stack: return addresses, innermost first. */
struct sc_stack {
	int		depth;
	uintptr_t	pcs[SC_STACK_MAX];
};

/* An address range [lo, hi). */
struct sc_range {
	uintptr_t	lo, hi;
};

/* Empty st.  Context: any, including a signal handler. */
SC_EXTERN void	sc_stack_zero(struct sc_stack *st);

/* Append pc.  Returns 0, or -1 when st is full (st is left unchanged).
 * Context: any, including a signal handler. */
SC_EXTERN int	sc_stack_put(struct sc_stack *st, uintptr_t pc);

/* Copy src to dst (FreeBSD's stack_copy(src, dst) order).
 * Context: any, including a signal handler. */
SC_EXTERN void	sc_stack_copy(const struct sc_stack *src, struct sc_stack *dst);

/*
 * The pure frame-pointer walker (stack_capture()).  Follows frame records
 * {saved %rbp, return address} from fp.  Rules, in order, for each record:
 * stop unless [fp, fp + 16) lies inside `stack`; stop unless fp is 8-byte
 * aligned; stop unless the return address lies in one of text[0..ntext)
 * (sorted by lo, not overlapping); stop when st is full; record the return
 * address; stop unless the next fp is strictly greater.  No read leaves
 * `stack`, whatever the memory holds.  st is emptied first.
 * Returns st->depth.  Context: any, including a signal handler.
 */
SC_EXTERN int	sc_stack_walk(struct sc_stack *st, uintptr_t fp,
		    struct sc_range stack, const struct sc_range *text,
		    size_t ntext);

/* Does the frame record [fp, fp + 16) lie inside r?  (kstack_contains())
 * Context: any. */
SC_EXTERN int	sc_frame_in_range(uintptr_t fp, struct sc_range r);

/* Is pc inside one of text[0..ntext) (sorted, not overlapping)?  Binary
 * search.  (INKERNEL())  Context: any. */
SC_EXTERN int	sc_pc_in_text(uintptr_t pc, const struct sc_range *text,
		    size_t ntext);

/*
 * "Kernel text" of this process: the executable segments of every loaded
 * object (dl_iterate_phdr), sorted and merged.  Computed on first use.
 * sc_text_ranges() returns a snapshot that stays valid until the process
 * exits (a refresh publishes a new one and never frees the old).
 * Context: any thread; not a signal handler for the first call.
 */
SC_EXTERN void	sc_text_ranges(const struct sc_range **textp, size_t *ntextp);

/* Recompute the text ranges, e.g. after dlopen().  Returns 0 or ENOMEM.
 * Context: any thread but a signal handler. */
SC_EXTERN int	sc_text_refresh(void);

/*
 * Capture the calling thread's stack (stack_save()): the first entry is the
 * return address into the caller of sc_stack_save(), then its callers.
 * On a simulated thread the bounds are its kernel stack; on a plain pthread,
 * the pthread's stack.  No machine needed.  Context: any thread.
 */
SC_EXTERN void	sc_stack_save(struct sc_stack *st);

/*
 * Symbolise pc (a return address) with libunwind: the name of the function
 * that contains it (static functions too) and the offset of pc from its
 * start.  Returns 0, or ENOENT when no symbol covers pc ("??").
 * Context: any thread but a signal handler.
 */
SC_EXTERN int	sc_symbolize(uintptr_t pc, char *name, size_t namelen,
		    uintptr_t *offp);

/* Print st the way the kernel's stack_print() does, one frame a line:
 * "#0 0x... at func+0x1c".  Context: any thread but a signal handler. */
SC_EXTERN void	sc_stack_print(FILE *fp, const struct sc_stack *st);

/*
 * Format st the way `procstat -kk` does: "func+0x1c func+0x40 ...",
 * innermost first, "??" for unknown addresses, into buf (always
 * NUL-terminated when len > 0).  Returns the length the whole text needs, as
 * snprintf does.  Context: any thread but a signal handler.
 */
SC_EXTERN size_t sc_stack_format_kk(const struct sc_stack *st, char *buf,
		    size_t len);

#ifdef __cplusplus
}
#endif

#endif /* !STACKCAP_H */
