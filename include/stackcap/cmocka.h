/*
 * stackcap/cmocka.h: stackcap/testing.h for tests written with CMocka
 * (https://cmocka.org; Debian: libcmocka-dev, link with -lcmocka).  This
 * header needs CMocka: it includes <cmocka.h> (with what <cmocka.h> wants
 * included before it) and stackcap/testing.h, turns the failures of
 * testing.h's helpers (SC_TEST_FAIL(): a timed-out SC_WAIT_FOR(), a chain
 * SC_ASSERT_CHAIN() does not find) into CMocka failures, and adds a panic
 * handler that turns a KASSERT on the test's own thread into a CMocka
 * assertion.  Include it instead of <cmocka.h>.  Header only; nothing here
 * is exported.  stackcap_testing(3) is the manual page.
 *
 * CMocka's assertions long-jump back to the test runner: they may be used
 * on the test's own thread only, never on a simulated thread's stack.
 */
#ifndef STACKCAP_CMOCKA_H
#define STACKCAP_CMOCKA_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stackcap/testing.h>

/* A failure of a helper is a CMocka failure at the caller's line. */
#undef SC_TEST_FAIL
#define SC_TEST_FAIL(file, line, ...) do {				\
	print_error("ERROR: ");						\
	print_error(__VA_ARGS__);					\
	_fail((file), (line));						\
} while (0)

/*
 * sc_test_panic_cmocka: a panic handler (sc_set_panic_handler()) for the
 * test's own thread that turns the KASSERT into a CMocka assertion: inside
 * expect_assert_failure(call) it long-jumps back to the test (the expected
 * failure); anywhere else it fails the test with the message.  Never
 * install it while a simulated thread may fail an assertion (it would
 * long-jump across stacks): use sc_test_panic_record there.
 */
static __attribute__((unused)) void
sc_test_panic_cmocka(const char *msg)
{
	mock_assert(0, msg, __FILE__, __LINE__);
}

#endif /* !STACKCAP_CMOCKA_H */
