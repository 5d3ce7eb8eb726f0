/*
 * <cmocka.h> and what it needs included first (setjmp.h, stdarg.h,
 * stddef.h, stdint.h): the one place the tests include it.  sc_test.h
 * includes this; a test that cannot include sc_test.h (test_abi.c, built
 * against stackcap 0.1's header) includes this alone.
 */
#ifndef SC_CMOCKA_H
#define SC_CMOCKA_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#endif /* !SC_CMOCKA_H */
