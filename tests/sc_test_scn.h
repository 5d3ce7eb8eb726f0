/*
 * Helpers of the tests that run the scenarios of tools/scenarios.c
 * (test_protocol.c, test_snapshot.c): one scenario, its result in R.
 * Include after sc_test.h (or <cmocka.h>).
 */
#ifndef SC_TEST_SCN_H
#define SC_TEST_SCN_H

#include "scenarios.h"

/*
 * TSan cannot model an asynchronous signal to a thread on a hand-switched
 * stack: it queues the signal in the state of the fiber that was current
 * when it arrived and runs the handler at that fiber's next interceptor
 * call, so whether and when the IPI is handled depends on which fiber runs
 * there and on what it calls (seen: ETIMEDOUT after 1 s).  The scenarios
 * that need an IPI to interrupt a thread in a given place are skipped
 * under TSan only; those whose IPI lands in the idle loop, in the deferred
 * path or nowhere still run there.
 */
#if defined(SC_SANITIZER_THREAD)
#define SKIP_UNDER_TSAN()	skip()
#else
#define SKIP_UNDER_TSAN()	do { } while (0)
#endif

static struct scn_result R;

/* Run the scenario `name`; fail unless it made its race happen. */
static inline void
run(const char *name)
{
	const struct scn_scenario *s = scn_find(name);

	assert_non_null(s);
	assert_int_equal(scn_run(s, 0, NULL, NULL, &R), 0);
	assert_true(R.raced);
}

/*
 * A running target is interrupted in spin_inner's loop or in a function it
 * calls; the interrupted function itself is not recorded (as in the
 * kernel), so spin_inner may be missing, its callers may not.
 */
#define ASSERT_SPIN_CHAIN(st)	SC_ASSERT_CHAIN((st), "spin_outer", \
	"target_main")

#endif /* !SC_TEST_SCN_H */
