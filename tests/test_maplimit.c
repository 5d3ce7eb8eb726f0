/*
 * At the mapping limit (vm.max_map_count): every kernel stack costs two
 * mappings (the guard page and the stack), a swapped stack one (it merges
 * with its guard), so sc_thread_create() and sc_thread_swapin() must fail
 * cleanly there (ENOMEM), never give a thread without a guard page nor a
 * "swapped in" stack that is still PROT_NONE.
 *
 * The process is brought to the limit by one-page mappings of alternating
 * protection, each its own mapping; then freeing k of them leaves exactly
 * k to spare.
 *
 * Kernel counterpart: vm_thread_new() and vm_thread_swapin()
 * (sys/vm/vm_glue.c, vm_swapout.c), which fail when the kernel map is
 * exhausted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sc_test.h"
#include "sc_internal.h"	/* td_kstack_map: where the guard must be */

#define PAGE	4096

static char *fill;		/* the filler mapping */
static size_t fill_pages;
static size_t fill_next;	/* next page to protect */
static size_t fill_holes;	/* pages given back with munmap */

/* Split the filler, one page at a time, until no mapping is left. */
static void
fill_to_limit(void)
{
	for (; fill_next + 2 < fill_pages; fill_next += 2)
		if (mprotect(fill + fill_next * PAGE, PAGE, PROT_NONE) != 0)
			break;
	assert_true(fill_next + 2 < fill_pages);	/* the limit was hit */
	assert_int_equal(errno, ENOMEM);
}

/* Give back k mappings: unmap k of the protected one-page islands. */
static void
spare(size_t k)
{
	size_t i;

	for (i = 0; i < k; i++) {
		fill_holes += 2;
		assert_true(fill_holes < fill_next);
		assert_int_equal(munmap(fill + (fill_next - fill_holes) * PAGE,
		    PAGE), 0);
	}
}

static int
setup(void **state)
{
	long max = 65530;
	FILE *f;

	f = fopen("/proc/sys/vm/max_map_count", "r");
	if (f != NULL) {
		if (fscanf(f, "%ld", &max) != 1)
			max = 65530;
		fclose(f);
	}
	/* Two pages per mapping, and room for the whole limit. */
	fill_pages = (size_t)max * 2 + 64;
	fill = mmap(NULL, fill_pages * PAGE, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (fill == MAP_FAILED)
		return (-1);
	fill_next = 1;
	fill_holes = 0;
	return (sc_test_setup(1));
}

static int
teardown(void **state)
{
	munmap(fill, fill_pages * PAGE);
	return (sc_test_teardown(state));
}

static void
nop(void *arg)
{
	(void)arg;
}

/* The protection of the page at addr, from /proc/self/maps ('?' if none). */
static char
page_prot(uintptr_t addr)
{
	unsigned long lo, hi;
	char perms[8], line[512];
	char r = '?';
	FILE *f;

	f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3)
			continue;
		if (addr >= lo && addr < hi) {
			r = perms[0];
			break;
		}
	}
	fclose(f);
	return (r);
}

/*
 * With 0, 1, 2... mappings to spare, sc_thread_create() fails with ENOMEM
 * until it can map the stack *and* its guard; it used to ignore a failed
 * guard mprotect() and give a thread whose overflow writes past its stack.
 * It runs first, so no machine was destroyed before it: the process's
 * cache of stack mappings (vm_mapcache.c) is empty and spares nothing.
 */
static void
test_create_at_limit(void **state)
{
	struct sc_thread *td = NULL;
	size_t k;
	int error = ENOMEM, nenomem = 0;

	fill_to_limit();
	for (k = 0; k < 4 && error == ENOMEM; k++) {
		if (k > 0)
			spare(1);
		td = NULL;
		error = sc_ithread_create(tp, "late", nop, NULL, &td);
		if (error == ENOMEM) {
			assert_null(td);
			nenomem++;
		}
	}
	/* Give the rest back before any assertion that may allocate. */
	munmap(fill, fill_pages * PAGE);
	fill = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fill_pages = 1;
	assert_int_equal(error, 0);
	assert_non_null(td);
	/* The thread has its guard page below its stack. */
	assert_int_equal(page_prot((uintptr_t)td->td_kstack_map), '-');
	assert_int_equal(page_prot(td->td_kstack.lo), 'r');
	/* ... and the first tries, at the limit itself, failed. */
	assert_true(nenomem >= 1);
	assert_int_equal(sc_ithread_schedule(td), 0);
	assert_int_equal(sc_thread_join(td), 0);
}

/*
 * sc_thread_swapin() at the limit: the stack's mprotect() must split its
 * mapping from the guard's, which fails.  It used to return 0 with the
 * stack still PROT_NONE, and the next switch to the thread died.
 */
static void
test_swapin_at_limit(void **state)
{
	struct sc_thread *td;

	td = sc_test_spawn_ithread("swapped", nop, NULL);
	assert_int_equal(sc_thread_swapout(td), 0);
	fill_to_limit();
	assert_int_equal(sc_thread_swapin(td), ENOMEM);
	assert_true(sc_thread_inhibitors(td) & SC_TDI_SWAPPED);
	assert_int_equal(sc_thread_state(td), SC_TDS_INHIBITED);
	spare(2);
	assert_int_equal(sc_thread_swapin(td), 0);
	assert_false(sc_thread_inhibitors(td) & SC_TDI_SWAPPED);
	/* It runs: its stack is readable and writable again. */
	assert_int_equal(sc_ithread_schedule(td), 0);
	assert_int_equal(sc_thread_join(td), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_at_limit, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_swapin_at_limit, setup,
		    teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
