/*
 * The walk of a host thread from its interrupted context: frame pointers
 * where the code has them (sc_stack_walk(), the kernel's walk), libunwind
 * from the signal's ucontext where it does not (glibc, built without
 * frame pointers), and each frame marked with the walker that found it.
 *
 * Kernel counterpart: stack_capture() of sys/x86/x86/stack_machdep.c,
 * which walks frame pointers only (the kernel is built with them).
 *
 * Safe in a signal handler once sc__host_walk_init() ran: the text sets
 * and the main thread's stack are computed there, by the requester, and
 * libunwind is warmed up there (its first use allocates: its address
 * space, caches and memory pool).  libunwind's local unwinding then reads
 * the interrupted thread's registers and memory and takes no lock of its
 * own that the handler's thread could hold (its cache locks block every
 * signal while held); it finds each frame's call frame information with
 * dl_iterate_phdr(), which takes glibc's loader lock: a thread that runs
 * dlopen() holds the handler there, and the requester's bound then
 * answers TIMEDOUT (docs/host.md, "What can go wrong").
 */
#define UNW_LOCAL_ONLY
#include <errno.h>
#include <libunwind.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_var.h"
#include "frame_bounds.h"
#include "sc_sanitizer.h"

/* (c) once sc__host_walk_init() returned: set under sc_host_mtx. */
static struct sc_range *sc_host_fptext;	/* objects with frame pointers */
static size_t sc_host_nfptext;
static struct sc_range sc_host_main_stack;
static _Atomic bool sc_host_walk_ready;
#if !defined(SC_SANITIZER_THREAD)
/* (c) libunwind's own reader of the local address space, kept. */
static int (*sc_host_unw_mem)(unw_addr_space_t, unw_word_t, unw_word_t *,
    int, void *);

/*
 * What the handler's walk reads without checks: the stack it walks, and
 * the signal's ucontext (libunwind reads the interrupted registers from
 * it as memory), which may lie on an alternate signal stack.  Thread-local:
 * only its own thread writes it, so no lock.
 */
struct sc_host_unw_mem {
	struct sc_range	um_stack;
	struct sc_range	um_uc;
};
static __thread struct sc_host_unw_mem sc_host_unw_known SC_TLS_IE;

static bool
sc_host_in(struct sc_range r, uintptr_t addr, size_t len)
{
	return (addr >= r.lo && addr < r.hi && r.hi - addr >= len);
}
#endif

/*
 * Objects built without frame pointers on Debian: their %rbp is a
 * general register, so the frame-pointer walk must not start in them.
 */
static bool
sc_host_has_fp(const char *base)
{
	static const char *const nofp[] = { "libc.so", "libm.so",
	    "ld-linux", "libpthread", "libdl.so", "librt.so", "libunwind",
	    "libgcc_s", "libstdc++", "linux-vdso", "libasan", "libtsan",
	    "libubsan", "liblzma", "libcmocka" };
	size_t i;

	for (i = 0; i < sizeof(nofp) / sizeof(nofp[0]); i++)
		if (strncmp(base, nofp[i], strlen(nofp[i])) == 0)
			return (false);
	return (true);
}

/* The main thread's stack, "[stack]" of /proc/self/maps. */
static void
sc_host_find_main_stack(void)
{
	unsigned long lo, hi;
	char line[512];
	FILE *fp;

	if ((fp = fopen("/proc/self/maps", "r")) == NULL)
		return;
	while (fgets(line, sizeof(line), fp) != NULL)
		if (strstr(line, "[stack]") != NULL &&
		    sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
			sc_host_main_stack.lo = lo;
			sc_host_main_stack.hi = hi;
			break;
		}
	fclose(fp);
}

#if !defined(SC_SANITIZER_THREAD)
/*
 * The local address space's reader of memory, in the library's place.
 *
 * Why: Debian builds libunwind with its conservative checks, so every read
 * of a step is checked first, a page at a time, with mincore() and a
 * write() of the byte to a pipe and a read() back: three system calls a
 * new page, about six a handler (each thread's stack is new to it).  The
 * walk already knows the stack it is on, [rsp, thread pointer), mapped
 * and readable (sc_host_stack_of()), and the ucontext: a read there needs
 * no check.  Every other read, and every read of any other unwinding in
 * the process (the ranges are empty outside a walk of ours), goes to
 * libunwind's own reader.  Not instrumented by ASan: it reads other
 * frames' redzones, as the frame-pointer walk does.
 */
SC_SAN_NO_ASAN static int
sc_host_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val,
    int write, void *arg)
{
	struct sc_host_unw_mem k = sc_host_unw_known;

	if (!write && (sc_host_in(k.um_stack, addr, sizeof(*val)) ||
	    sc_host_in(k.um_uc, addr, sizeof(*val)))) {
		*val = *(const unw_word_t *)addr;
		return (0);
	}
	return (sc_host_unw_mem(as, addr, val, write, arg));
}
#endif

int
sc__host_walk_init(void)
{
#if !defined(SC_SANITIZER_THREAD)
	unw_accessors_t *acc;
#endif
	const struct sc_range *text;
	struct sc_stack warm;
	uint64_t unwound;
	size_t ntext;

	if (atomic_load(&sc_host_walk_ready))
		return (0);
	sc_text_ranges(&text, &ntext);
	if (sc__exec_ranges(sc_host_has_fp, &sc_host_fptext,
	    &sc_host_nfptext) != 0)
		return (ENOMEM);
	sc_host_find_main_stack();
#if !defined(SC_SANITIZER_THREAD)
	/* Once per process: no walk of ours runs before the store below. */
	acc = unw_get_accessors(unw_local_addr_space);
	if (acc != NULL && acc->access_mem != sc_host_access_mem) {
		sc_host_unw_mem = acc->access_mem;
		acc->access_mem = sc_host_access_mem;
	}
#endif
	atomic_store(&sc_host_walk_ready, true);
	/* libunwind's first use allocates: here, not in a handler. */
	sc__host_walk_self(&warm, &unwound);
	return (0);
}

/*
 * The stack the frame-pointer walk may read: from the interrupted %rsp
 * up.  glibc puts a thread's descriptor (%fs:0, its thread pointer) at
 * the top of the thread's stack block, its own or one the program gave
 * (pthread_attr_setstack()), so [rsp, tp) is mapped and readable; the
 * main thread's descriptor is elsewhere, and its stack is [stack].  Any
 * other place (a simulated kernel stack, a coroutine's, an alternate
 * signal stack) gets no frame-pointer walk: libunwind only.
 */
static struct sc_range
sc_host_stack_of(uintptr_t rsp)
{
	struct sc_range r = { 0, 0 };
	uintptr_t tp;

	__asm__("mov %%fs:0, %0" : "=r"(tp));
	if (rsp < tp && tp - rsp <= ((uintptr_t)256 << 20)) {
		r.lo = rsp;
		r.hi = tp;
	} else if (rsp >= sc_host_main_stack.lo &&
	    rsp < sc_host_main_stack.hi) {
		r.lo = rsp;
		r.hi = sc_host_main_stack.hi;
	}
	return (r);
}

static bool
sc_host_in_fptext(uintptr_t pc)
{
	struct sc_range hit;

	return (sc__text_lookup(pc, sc_host_fptext, sc_host_nfptext, &hit));
}

/* Frame pointers from fp, after the frame at pc (depth > 0 on entry). */
static void
sc_host_walk_fp(struct sc_stack *st, uintptr_t fp, struct sc_range stack)
{
	const struct sc_range *text;
	struct sc_stack rest;
	size_t ntext;
	int i;

	sc_text_ranges(&text, &ntext);
	sc_stack_walk(&rest, fp, stack, text, ntext);
	for (i = 0; i < rest.depth && st->depth < SC_STACK_MAX; i++)
		st->pcs[st->depth++] = rest.pcs[i];
}

/*
 * Walk from uc.  The first frame is the interrupted pc; libunwind steps
 * from it, as long as the pc is in code without frame pointers or the
 * stack is not one the frame-pointer walk may read, and always for the
 * first step: a pc in a leaf function that keeps no frame, or in a
 * prologue, has its caller's %rbp, and only the call frame information
 * knows.  From the first caller in code with frame pointers on (that
 * frame itself found by libunwind's step), the frame-pointer walk from
 * that frame's %rbp.  Frames from a step are marked in *unwound, and the
 * first when its pc is in code without frame pointers.
 *
 * Under TSan a handler runs late, at an interceptor, with a context that
 * is no longer the thread's (ipi_sim.c says more): there libunwind is
 * not used, as it would follow registers that no longer describe the
 * stack, and the frame-pointer walk starts from the context's %rbp.
 */
void
sc__host_walk(const ucontext_t *uc, struct sc_stack *st, uint64_t *unwound)
{
	const greg_t *g = uc->uc_mcontext.gregs;
	struct sc_range stack = sc_host_stack_of((uintptr_t)g[REG_RSP]);
	uintptr_t pc = (uintptr_t)g[REG_RIP];
#if !defined(SC_SANITIZER_THREAD)
	struct sc_host_unw_mem saved;
	unw_cursor_t cur;
	unw_word_t ip, bp;
#endif

	st->depth = 0;
	*unwound = 0;
	if (!atomic_load(&sc_host_walk_ready) || pc == 0)
		return;
#if defined(SC_SANITIZER_THREAD)
	if (stack.hi != 0 && sc_host_in_fptext(pc)) {
		st->pcs[st->depth++] = pc;
		sc_host_walk_fp(st, (uintptr_t)g[REG_RBP], stack);
	}
#else
	/* A handler nested in ours (a fault, say) puts ours back. */
	saved = sc_host_unw_known;
	sc_host_unw_known.um_stack = stack;
	sc_host_unw_known.um_uc.lo = (uintptr_t)uc;
	sc_host_unw_known.um_uc.hi = (uintptr_t)uc + sizeof(*uc);
	if (unw_init_local2(&cur, (unw_context_t *)(uintptr_t)uc,
	    UNW_INIT_SIGNAL_FRAME) != 0)
		goto out;
	while (st->depth < SC_STACK_MAX) {
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) != 0 || ip == 0)
			break;
		if (st->depth > 0 || !sc_host_in_fptext(ip))
			*unwound |= (uint64_t)1 << st->depth;
		st->pcs[st->depth++] = ip;
		if (st->depth > 1 && stack.hi != 0 && sc_host_in_fptext(ip) &&
		    unw_get_reg(&cur, UNW_X86_64_RBP, &bp) == 0) {
			sc_host_walk_fp(st, bp, stack);
			break;
		}
		if (unw_step(&cur) <= 0)
			break;
	}
out:
	sc_host_unw_known = saved;
#endif
}

/*
 * The calling thread (SC_HOST_SELF), from its own context, less the
 * library's frames: the first is the return into the caller of
 * sc_host_snapshot() or sc_host_capture().
 */
SC_NOIPA void
sc__host_walk_self(struct sc_stack *st, uint64_t *unwound)
{
	unw_context_t uc;
	int i, skip;

	st->depth = 0;
	*unwound = 0;
	if (unw_getcontext(&uc) != 0)
		return;
#if defined(SC_SANITIZER_THREAD)
	/* The context is this thread's own: libunwind may follow it. */
	{
		unw_cursor_t cur;
		unw_word_t ip;

		if (unw_init_local(&cur, &uc) == 0)
			while (st->depth < SC_STACK_MAX &&
			    unw_get_reg(&cur, UNW_REG_IP, &ip) == 0 &&
			    ip != 0) {
				*unwound |= (uint64_t)1 << st->depth;
				st->pcs[st->depth++] = ip;
				if (unw_step(&cur) <= 0)
					break;
			}
	}
#else
	sc__host_walk((const ucontext_t *)(const void *)&uc, st, unwound);
#endif
	for (skip = 0; skip < st->depth &&
	    sc__in_library_text(st->pcs[skip]); skip++)
		;
	for (i = skip; i < st->depth; i++)
		st->pcs[i - skip] = st->pcs[i];
	st->depth -= skip;
	*unwound >>= skip;
}
