/*
 * The walker's frame checks and the "kernel text" they read: is a frame
 * record inside the stack (kstack_contains()), and does a return address
 * point into the process's executable segments (INKERNEL()).
 *
 * Kernel counterparts: kstack_contains() (sys/amd64/include/stack.h),
 * INKERNEL() (sys/amd64/include/param.h), and behind it the kernel
 * linker's view of the loaded objects (sys/kern/link_elf.c, and
 * linker_search_symbol() for kldload'ed modules).  Here the text is every
 * executable segment of the process, found with dl_iterate_phdr(), so
 * that the frames of test programs and of the library count;
 * sc_text_refresh() is the kldload of dlopen().  The checks themselves
 * are inline in frame_bounds.h, for the walker (stack_walk_x86.c); this
 * file gives their public forms.
 */
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "sc_internal.h"
#include "frame_bounds.h"

/* An immutable, sorted, merged set of text ranges (the key is
 * sc_internal.h's). */
struct sc_textset {
	size_t		ts_n;		/* (c) */
	struct sc_textset *ts_prev;	/* (g: sc_text_mtx) older sets, kept:
					   readers may hold them */
	struct sc_range	ts_r[];		/* (c) */
};

static _Atomic(struct sc_textset *) sc_text_cur;
static pthread_mutex_t sc_text_mtx = PTHREAD_MUTEX_INITIALIZER;

int
sc_frame_in_range(uintptr_t fp, struct sc_range r)
{
	return (sc__kstack_contains(fp, r));
}

int
sc_pc_in_text(uintptr_t pc, const struct sc_range *text, size_t ntext)
{
	struct sc_range hit;

	return (sc__text_lookup(pc, text, ntext, &hit));
}

struct sc_text_build {
	bool		(*want)(const char *base);
	struct sc_range	*r;
	size_t		n, cap;
	int		error;
};

static int
sc_text_phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct sc_text_build *b = arg;
	struct sc_range *nr;
	const ElfW(Phdr) *ph;
	const char *base;
	int i;

	(void)size;
	if (b->want != NULL) {
		base = info->dlpi_name != NULL ?
		    strrchr(info->dlpi_name, '/') : NULL;
		base = base != NULL ? base + 1 : info->dlpi_name;
		if (!b->want(base != NULL ? base : ""))
			return (0);
	}
	for (i = 0; i < info->dlpi_phnum; i++) {
		ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || (ph->p_flags & PF_X) == 0 ||
		    ph->p_memsz == 0)
			continue;
		if (b->n == b->cap) {
			b->cap = b->cap ? b->cap * 2 : 32;
			nr = realloc(b->r, b->cap * sizeof(*nr));
			if (nr == NULL) {
				b->error = ENOMEM;
				return (1);
			}
			b->r = nr;
		}
		b->r[b->n].lo = info->dlpi_addr + ph->p_vaddr;
		b->r[b->n].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		b->n++;
	}
	return (0);
}

static int
sc_range_cmp(const void *a, const void *b)
{
	const struct sc_range *ra = a, *rb = b;

	return (ra->lo < rb->lo ? -1 : ra->lo > rb->lo);
}

size_t
sc__ranges_sort_merge(struct sc_range *r, size_t n)
{
	size_t i, out;

	if (n == 0)
		return (0);
	qsort(r, n, sizeof(*r), sc_range_cmp);
	for (out = 0, i = 1; i < n; i++) {
		if (r[i].lo <= r[out].hi) {
			if (r[i].hi > r[out].hi)
				r[out].hi = r[i].hi;
			continue;
		}
		r[++out] = r[i];
	}
	return (out + 1);
}

int
sc__exec_ranges(bool (*want)(const char *base), struct sc_range **rp,
    size_t *np)
{
	struct sc_text_build b = { .want = want };

	/* glibc holds its loader lock while the callback runs. */
	sc__host_enter();
	dl_iterate_phdr(sc_text_phdr_cb, &b);
	sc__host_exit();
	if (b.error != 0) {
		free(b.r);
		return (b.error);
	}
	*rp = b.r;
	*np = sc__ranges_sort_merge(b.r, b.n);
	return (0);
}

static int
sc_text_refresh1(void)
{
	struct sc_textset *ts, *prev;
	struct sc_range *r;
	size_t n;
	int error;

	if ((error = sc__exec_ranges(NULL, &r, &n)) != 0)
		return (error);
	ts = malloc(sizeof(*ts) + n * sizeof(ts->ts_r[0]));
	if (ts == NULL) {
		free(r);
		return (ENOMEM);
	}
	ts->ts_n = n;
	if (n != 0)
		memcpy(ts->ts_r, r, n * sizeof(ts->ts_r[0]));
	free(r);

	/*
	 * Publish with a release store: a signal handler may be walking with
	 * the previous set, so it is chained, never freed: not at exit
	 * either, where the process's other threads still run and may walk
	 * (exit() runs the destructors while they do).  The chain from
	 * sc_text_cur keeps every set reachable for LeakSanitizer.  So a set
	 * equal to the current one is not published: a program that refreshes
	 * without loading or unloading anything, in a loop, grew without end
	 * (test_destroy_text_looper's process reached 7.7 GB, and the OOM
	 * killer, while it waited for the run token).
	 */
	sc__host_lock(&sc_text_mtx);
	prev = atomic_load_explicit(&sc_text_cur, memory_order_relaxed);
	if (prev != NULL && prev->ts_n == n &&
	    memcmp(prev->ts_r, ts->ts_r, n * sizeof(ts->ts_r[0])) == 0) {
		sc__host_unlock(&sc_text_mtx);
		free(ts);
		return (0);
	}
	ts->ts_prev = prev;
	atomic_store_explicit(&sc_text_cur, ts, memory_order_release);
	sc__host_unlock(&sc_text_mtx);
	return (0);
}

int
sc_text_refresh(void)
{
	int error;

	/* One host section: a stop inside would lose what it allocated. */
	sc__host_enter();
	error = sc_text_refresh1();
	sc__host_exit();
	return (error);
}

void
sc_text_ranges(const struct sc_range **textp, size_t *ntextp)
{
	struct sc_textset *ts;

	ts = atomic_load_explicit(&sc_text_cur, memory_order_acquire);
	if (ts == NULL) {
		/* First use: compute once; a failure leaves no text. */
		sc__host_lock(&sc_text_mtx);
		ts = atomic_load_explicit(&sc_text_cur, memory_order_acquire);
		sc__host_unlock(&sc_text_mtx);
		if (ts == NULL && sc_text_refresh() == 0)
			ts = atomic_load_explicit(&sc_text_cur,
			    memory_order_acquire);
	}
	if (ts == NULL) {
		*textp = NULL;
		*ntextp = 0;
		return;
	}
	*textp = ts->ts_r;
	*ntextp = ts->ts_n;
}

