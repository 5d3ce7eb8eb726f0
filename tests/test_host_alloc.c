/*
 * glibc's backtrace() allocates on first use and can deadlock in a
 * handler: the library's handler allocates nothing, from the first
 * request on, on the frame-pointer path and on libunwind's.  malloc and
 * its kin are interposed and count the calls made inside the handler
 * (sc__host_in_handler()).  Not under the sanitizers: their runtimes own
 * malloc.
 */
#include <stdlib.h>

#include "stackcap/cmocka.h"
#include "host_kinds.h"
#include "host_var.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static _Atomic long in_handler_allocs;

static void
count(void)
{
	if (sc__host_in_handler())
		atomic_fetch_add(&in_handler_allocs, 1);
}

void *
malloc(size_t n)
{
	count();
	return (__libc_malloc(n));
}

void *
calloc(size_t n, size_t m)
{
	count();
	return (__libc_calloc(n, m));
}

void *
realloc(void *p, size_t n)
{
	count();
	return (__libc_realloc(p, n));
}

void
free(void *p)
{
	count();
	__libc_free(p);
}

static void
test_host_no_allocation_in_handler(void **state)
{
	struct hk_thread t[HK_NKINDS];
	struct sc_host_thread out[64];
	size_t n, i;
	int k, round, ok = 0;

	(void)state;
	/* The first request of the process comes after this: the signal
	 * is chosen here, the walker is initialised by the first call. */
	hk_init();
	for (k = 0; k < HK_NKINDS; k++)
		assert_int_equal(hk_start(&t[k], k, 0), 0);
	for (round = 0; round < 20; round++) {
		assert_int_equal(sc_host_snapshot(out, 64, &n, 2000000000L),
		    0);
		for (i = 0; i < n; i++)
			ok += out[i].verdict == SC_HOST_OK;
	}
	hk_stop_all(t, HK_NKINDS);
	assert_true(ok >= 20 * 3);
	assert_int_equal(atomic_load(&in_handler_allocs), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_no_allocation_in_handler),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
