/*
 * A program built against stackcap 0.1's header (tests/abi/stackcap_0_1.h)
 * runs with the library as it is now, whose structs have grown: each
 * struct it allocates sits at the very end of a page followed by a
 * PROT_NONE page, so a library that reads or writes one byte more than
 * the caller has faults at once.  The results must be right too.
 *
 * (libuv and FreeBSD keep old callers working the same way: by size or
 * version passed in, e.g. the sysctl interface's buffer lengths.)
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>
#include "stackcap_0_1.h"

#define PAGE	4096

static char *pages;

/* An object of `size` bytes that ends where the PROT_NONE page begins. */
static void *
at_page_end(size_t size)
{
	return (pages + PAGE - size);
}

static int
setup(void **state)
{
	pages = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED)
		return (-1);
	return (mprotect(pages + PAGE, PAGE, PROT_NONE));
}

static int
teardown(void **state)
{
	return (munmap(pages, 2 * PAGE));
}

static void
nop(void *arg)
{
	(void)arg;
}

static void
test_old_layouts(void **state)
{
	struct sc_machine_config *cfg;
	struct sc_counters *c;
	struct sc_kstack *kk;
	struct sc_machine *m = NULL;
	struct sc_thread *td[2];
	struct sc_proc *p;
	size_t n = 0;

	cfg = at_page_end(sizeof(*cfg));
	sc_machine_config_init(cfg);
	assert_int_equal(cfg->ncpu, 2);
	assert_int_equal(cfg->kstack_pages, 4);
	assert_int_equal(cfg->capture_timeout_ns, 1000L * 1000 * 1000);
	assert_int_equal(cfg->hold_lock_across_ipi, 0);
	cfg->ncpu = 1;
	assert_int_equal(sc_machine_create(cfg, &m), 0);
	assert_int_equal(sc_proc_create(m, "old", &p), 0);
	assert_int_equal(sc_ithread_create(p, "first", nop, NULL, &td[0]), 0);
	assert_int_equal(sc_ithread_create(p, "second", nop, NULL, &td[1]),
	    0);

	/* Two elements of the old size, the second against the page end. */
	kk = at_page_end(2 * sizeof(*kk));
	assert_int_equal(sc_proc_kstack(p, kk, 2, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(kk[0].tid, sc_thread_tid(td[0]));
	assert_string_equal(kk[0].tdname, "first");
	assert_int_equal(kk[1].tid, sc_thread_tid(td[1]));
	assert_string_equal(kk[1].tdname, "second");
	assert_int_equal(kk[1].state, SC_KKST_STATE_STACKOK);
	assert_int_equal(kk[1].stack.depth, 0);	/* never ran */

	c = at_page_end(sizeof(*c));
	memset(c, 0xff, sizeof(*c));
	sc_machine_counters(m, c);
	assert_true(c->switches < (uint64_t)1 << 40);	/* was written */
	assert_int_equal(c->timeouts, 0);
	assert_int_equal(c->exits, 0);
	sc_machine_destroy(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_old_layouts, setup,
		    teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
