/*
 * KASSERT failures.
 *
 * Kernel counterpart: panic() and KASSERT (sys/kern/kern_shutdown.c,
 * sys/sys/systm.h).  Tests replace the handler to check that misuse is
 * caught; the default prints the message and aborts.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "sc_internal.h"
#include "check_var.h"

static _Atomic(void (*)(const char *)) sc_panic_fn;

void
sc_set_panic_handler(void (*fn)(const char *msg))
{
	atomic_store(&sc_panic_fn, fn);
}

void
sc__panic(const char *func, const char *cond, const char *fmt, ...)
{
	void (*fn)(const char *);
	struct sc_thread *td;
	static __thread char msg[512];	/* outlives a handler that long-jumps */
	va_list ap;
	int n;

	n = snprintf(msg, sizeof(msg), "panic: %s: ", func);
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(msg))
		n += vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	td = sc_curthread();
	if (n > 0 && (size_t)n < sizeof(msg)) {
		if (td != NULL)
			snprintf(msg + n, sizeof(msg) - (size_t)n,
			    " (%s) [curthread %d \"%s\"]", cond, td->td_tid,
			    td->td_name);
		else
			snprintf(msg + n, sizeof(msg) - (size_t)n,
			    " (%s) [plain pthread]", cond);
	}
	/* Under sc_check() a KASSERT fails the run, and the run goes on. */
	if (sc__chk_panic(msg))
		fn = NULL;
	else if ((fn = atomic_load(&sc_panic_fn)) == NULL) {
		fprintf(stderr, "%s\n", msg);
		abort();
	}
	if (fn != NULL)
		fn(msg);
	/* The handler returned: a simulated thread never runs again. */
	if (td != NULL)
		sc__thread_park(td);
}
