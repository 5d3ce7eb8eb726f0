/*
 * A process-wide cache of the anonymous mappings a machine makes for its
 * stacks (kernel stacks with their guard page, user stacks, the CPUs'
 * signal stacks), for the next machine.
 *
 * Kernel counterpart: kstack_cache of sys/vm/vm_glue.c, a UMA cache zone
 * of kernel stacks that outlives the threads (at least 128 of them,
 * kstack_cache_size).  Beyond the kernel: it outlives the machines too.
 * A fuzz harness or a checker makes thousands of machines in one
 * process, and ASan keeps the shadow of every address ever mapped: each
 * machine's stacks mapped at new addresses grew it without end (44 KB a
 * run of fuzz_machine, docs/determinism.md).  Reused, the stacks keep
 * their addresses and their shadow.
 *
 * A mapping is handed back unpoisoned (sc__san_unpoison(): the frames of
 * a thread that never returned must not poison the next one) and with
 * its contents as they were: the kernel stacks' first frame is built
 * anew, and the walker stops at it.  Cached mappings count against
 * vm.max_map_count: when a new mapping fails, the cache is emptied and
 * the mapping tried once more, so a machine never fails for want of
 * mappings that the cache holds.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/mman.h>

#include "sc_internal.h"
#include "sc_sanitizer.h"

#define SC_MAPCACHE_MAX	256

struct sc_mapent {
	void		*me_p;
	size_t		me_len;		/* the whole mapping, guard included */
	bool		me_guard;	/* its first page PROT_NONE */
};

/* (c) sc_mapcache_mtx */
static pthread_mutex_t sc_mapcache_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct sc_mapent sc_mapcache[SC_MAPCACHE_MAX];	/* (c) */
static int sc_nmapcache;				/* (c) */

static void *
sc_map_new(size_t len, bool guard)
{
	void *p;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE |
	    MAP_ANONYMOUS | MAP_NORESERVE | (guard ? MAP_STACK : 0), -1, 0);
	if (p == MAP_FAILED)
		return (NULL);
	/*
	 * The guard page below the stack: an overflow faults at once.  The
	 * mprotect() splits the mapping in two, which fails at the mapping
	 * limit (vm.max_map_count): no stack without its guard.
	 */
	if (guard && mprotect(p, SC_PAGE_SIZE, PROT_NONE) != 0) {
		(void)munmap(p, len);
		return (NULL);
	}
	return (p);
}

/* Unmap every cached mapping. */
static void
sc_mapcache_drain(void)
{
	struct sc_mapent e;

	for (;;) {
		sc__host_lock(&sc_mapcache_mtx);
		if (sc_nmapcache == 0) {
			sc__host_unlock(&sc_mapcache_mtx);
			break;
		}
		e = sc_mapcache[--sc_nmapcache];
		sc__host_unlock(&sc_mapcache_mtx);
		(void)munmap(e.me_p, e.me_len);
	}
}

void *
sc__map_get(size_t len, bool guard)
{
	void *p = NULL;
	int i;

	SC_KASSERT(len > (guard ? SC_PAGE_SIZE : 0) && len % SC_PAGE_SIZE == 0,
	    NULL, "sc__map_get: length %zu", len);
	sc__host_lock(&sc_mapcache_mtx);
	for (i = sc_nmapcache - 1; i >= 0; i--) {
		if (sc_mapcache[i].me_len != len ||
		    sc_mapcache[i].me_guard != guard)
			continue;
		p = sc_mapcache[i].me_p;
		sc_mapcache[i] = sc_mapcache[--sc_nmapcache];
		break;
	}
	sc__host_unlock(&sc_mapcache_mtx);
	if (p != NULL)
		return (p);
	if ((p = sc_map_new(len, guard)) != NULL)
		return (p);
	sc_mapcache_drain();
	return (sc_map_new(len, guard));
}

void
sc__map_put(void *p, size_t len, bool guard)
{
	struct sc_range r;

	if (p == NULL)
		return;
	r.lo = (uintptr_t)p + (guard ? SC_PAGE_SIZE : 0);
	r.hi = (uintptr_t)p + len;
	sc__san_unpoison(r);
	sc__host_lock(&sc_mapcache_mtx);
	if (sc_nmapcache < SC_MAPCACHE_MAX) {
		sc_mapcache[sc_nmapcache].me_p = p;
		sc_mapcache[sc_nmapcache].me_len = len;
		sc_mapcache[sc_nmapcache].me_guard = guard;
		sc_nmapcache++;
		p = NULL;
	}
	sc__host_unlock(&sc_mapcache_mtx);
	/* A whole mapping: munmap() splits nothing and cannot fail. */
	if (p != NULL)
		(void)munmap(p, len);
}
