/* struct sc_stack operations and symbolised output (subr_stack.c). */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sc_test.h"
#include "stackcap.h"

static void
test_put_until_full(void **state)
{
	struct sc_stack st;
	int i;

	sc_stack_zero(&st);
	assert_int_equal(st.depth, 0);
	for (i = 0; i < SC_STACK_MAX; i++)
		assert_int_equal(sc_stack_put(&st, 0x1000 + i), 0);
	assert_int_equal(st.depth, SC_STACK_MAX);
	assert_int_equal(sc_stack_put(&st, 0xdead), -1);
	assert_int_equal(st.depth, SC_STACK_MAX);
	assert_int_equal(st.pcs[SC_STACK_MAX - 1], 0x1000 + SC_STACK_MAX - 1);
}

static void
test_copy(void **state)
{
	struct sc_stack a, b;

	sc_stack_zero(&a);
	sc_stack_put(&a, 1);
	sc_stack_put(&a, 2);
	memset(&b, 0xff, sizeof(b));
	sc_stack_copy(&a, &b);
	assert_int_equal(b.depth, 2);
	assert_int_equal(b.pcs[0], 1);
	assert_int_equal(b.pcs[1], 2);
	/* A corrupt depth is clamped, never read past the array. */
	a.depth = SC_STACK_MAX + 100;
	sc_stack_copy(&a, &b);
	assert_int_equal(b.depth, SC_STACK_MAX);
	a.depth = -3;
	sc_stack_copy(&a, &b);
	assert_int_equal(b.depth, 0);
}

SC_NOIPA static void
named_static_function(void)
{
	__asm__ volatile("" ::: "memory");
}

static void
test_symbolize_static(void **state)
{
	char name[64], buf[128];
	struct sc_stack st;
	uintptr_t off;
	size_t n;

	/* A "return address" 5 bytes into a static function. */
	assert_int_equal(sc_symbolize((uintptr_t)named_static_function + 5,
	    name, sizeof(name), &off), 0);
	assert_string_equal(name, "named_static_function");
	assert_int_equal(off, 5);
	assert_int_not_equal(sc_symbolize(0x10, name, sizeof(name), &off), 0);
	assert_string_equal(name, "??");

	sc_stack_zero(&st);
	sc_stack_put(&st, (uintptr_t)named_static_function + 5);
	sc_stack_put(&st, 0x10);
	n = sc_stack_format_kk(&st, buf, sizeof(buf));
	assert_string_equal(buf, "named_static_function+0x5 ??");
	assert_int_equal(n, strlen(buf));
	/* Truncation: always terminated, returns the full length. */
	assert_int_equal(sc_stack_format_kk(&st, buf, 8), n);
	assert_int_equal(strlen(buf), 7);
}

/*
 * A name buffer shorter than the symbol: libunwind fills it with a
 * truncated name and says -UNW_ENOMEM; a symbol does cover pc, so that is
 * the truncated name, NUL-terminated, and 0, with the offset.
 */
static void
test_symbolize_short_buffer(void **state)
{
	char name[4], exact[sizeof("named_static_function")];
	uintptr_t pc = (uintptr_t)named_static_function + 5, off;

	memset(name, 'x', sizeof(name));
	assert_int_equal(sc_symbolize(pc, name, sizeof(name), &off), 0);
	assert_string_equal(name, "nam");
	assert_int_equal(off, 5);
	/* Room for the terminator only: an empty name, still 0. */
	off = 0;
	assert_int_equal(sc_symbolize(pc, name, 1, &off), 0);
	assert_string_equal(name, "");
	assert_int_equal(off, 5);
	/* Exactly the name and its terminator: no truncation at all. */
	assert_int_equal(sc_symbolize(pc, exact, sizeof(exact), &off), 0);
	assert_string_equal(exact, "named_static_function");
	/* No symbol: still ENOENT, and as much of "??" as fits. */
	assert_int_equal(sc_symbolize(0x10, name, 2, &off), ENOENT);
	assert_string_equal(name, "?");
}

/*
 * The same address asked again gives the same answer, from the cache; an
 * object unloaded takes its names with it: its function's address, asked
 * after dlclose(), is not named by the name it had (a cache that did not
 * watch the loaded objects would answer it).
 */
static void
test_symbolize_cache_forgets_unloaded(void **state)
{
	int (*fn)(int);
	char name[64];
	uintptr_t pc, off, off2;
	void *h;

	(void)state;
	h = dlopen(SC_TEST_SYM_MODULE, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	fn = (int (*)(int))dlsym(h, "sc_test_module_fn");
	assert_non_null(fn);
	assert_int_equal(fn(2), 7);
	pc = (uintptr_t)fn + 4;
	assert_int_equal(sc_symbolize(pc, name, sizeof(name), &off), 0);
	assert_string_equal(name, "sc_test_module_fn");
	assert_int_equal(off, 4);
	memset(name, 0, sizeof(name));
	assert_int_equal(sc_symbolize(pc, name, sizeof(name), &off2), 0);
	assert_string_equal(name, "sc_test_module_fn");
	assert_int_equal(off2, off);
	/* The short buffer of the cached name: truncated, still 0. */
	assert_int_equal(sc_symbolize(pc, name, 5, &off2), 0);
	assert_string_equal(name, "sc_t");
	assert_int_equal(dlclose(h), 0);
	if (sc_symbolize(pc, name, sizeof(name), &off) == 0)
		assert_string_not_equal(name, "sc_test_module_fn");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_until_full),
		cmocka_unit_test(test_copy),
		cmocka_unit_test(test_symbolize_static),
		cmocka_unit_test(test_symbolize_short_buffer),
		cmocka_unit_test(test_symbolize_cache_forgets_unloaded),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
