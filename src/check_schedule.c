/*
 * Systematic testing: a schedule as a string (check_var.h), and back.
 *
 *	sc1:ule:w:412:9f3a21c0d2e4f6a1:+37.1+9.2
 *
 * the format's version; the scheduler; "w" if a futex waiter waits for
 * its wake, "p" if it polls (PCT's runs: sim_det_token.c); the decisions
 * the run made; the fingerprint of their shape; the decisions that are
 * not the default, each as the gap from the previous one's index (the
 * first's from -1) and its alternative: here decision 36 took
 * alternative 1 and decision 45 alternative 2.  A schedule names no
 * address and no time: it stays good across a rebuild as long as the run
 * makes the same decisions, the same body on the same library's
 * scheduling points (docs/check.md).
 *
 * No kernel counterpart.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_internal.h"
#include "check_var.h"

#define SC_CHK_VERSION	"sc1"

int
sc__chk_cost(const struct sc_chk_dec *d, size_t n)
{
	uint64_t cost = 0;
	size_t i;

	for (i = 0; i < n; i++)
		cost += d[i].d_alt;
	return (cost > INT32_MAX ? INT32_MAX : (int)cost);
}

char *
sc__chk_format(int sched, bool polled, uint64_t ndec, uint64_t fp,
    const struct sc_chk_dec *d, size_t n)
{
	size_t len = 64 + n * 32, at;
	uint64_t prev = UINT64_MAX;	/* -1: the first gap counts from it */
	char *s;
	size_t i;

	if ((s = malloc(len)) == NULL)
		return (NULL);
	at = (size_t)snprintf(s, len, SC_CHK_VERSION ":%s:%s:%" PRIu64 ":%016"
	    PRIx64 ":", sched == SC_SCHED_4BSD ? "4bsd" : "ule",
	    polled ? "p" : "w", ndec, fp);
	for (i = 0; i < n; i++) {
		at += (size_t)snprintf(s + at, len - at, "+%" PRIu64 ".%u",
		    d[i].d_idx - prev, d[i].d_alt);
		prev = d[i].d_idx;
	}
	return (s);
}

/* A decimal number at *p, advanced past it; false if none or too big. */
static bool
sc_chk_num(const char **p, uint64_t *v)
{
	const char *q = *p;
	uint64_t x = 0;

	if (*q < '0' || *q > '9')
		return (false);
	for (; *q >= '0' && *q <= '9'; q++) {
		if (x > (UINT64_MAX - 9) / 10)
			return (false);
		x = x * 10 + (uint64_t)(*q - '0');
	}
	*p = q;
	*v = x;
	return (true);
}

/* why[] says that s is malformed at p: what was expected. */
static int
sc_chk_bad(const char *s, const char *p, const char *expected, char *why,
    size_t len)
{
	snprintf(why, len, "malformed schedule at character %zu (%s%.8s%s): "
	    "expected %s; a schedule reads sc1:SCHED:WAITS:NDEC:FP:+GAP.ALT"
	    "...",
	    (size_t)(p - s) + 1, *p == '\0' ? "the end" : "\"",
	    p, *p == '\0' ? "" : "\"", expected);
	return (EINVAL);
}

int
sc__chk_parse(const char *s, int *sched, bool *polled, uint64_t *ndec,
    uint64_t *fp, struct sc_chk_dec **dp, size_t *np, char *why, size_t len)
{
	const char *p = s, *q, *g;
	struct sc_chk_dec *d;
	uint64_t gap, alt, idx;
	size_t n, cap;
	char *end;

	*dp = NULL;
	*np = 0;
	if (strncmp(p, SC_CHK_VERSION ":", 4) != 0)
		return (sc_chk_bad(s, p, "\"sc1:\" (the format's version)",
		    why, len));
	p += 4;
	if (strncmp(p, "ule:", 4) == 0)
		*sched = SC_SCHED_ULE;
	else if (strncmp(p, "4bsd:", 5) == 0)
		*sched = SC_SCHED_4BSD;
	else
		return (sc_chk_bad(s, p, "\"ule:\" or \"4bsd:\"", why, len));
	p = strchr(p, ':') + 1;
	if ((*p != 'w' && *p != 'p') || p[1] != ':')
		return (sc_chk_bad(s, p, "\"w:\" or \"p:\" (how futex "
		    "waiters wait)", why, len));
	*polled = *p == 'p';
	p += 2;
	if (!sc_chk_num(&p, ndec) || *p != ':')
		return (sc_chk_bad(s, p, "the count of decisions, then ':'",
		    why, len));
	p++;
	q = p;
	*fp = strtoull(p, &end, 16);
	if (end - q != 16 || *end != ':')
		return (sc_chk_bad(s, p, "16 hex digits (the fingerprint), "
		    "then ':'", why, len));
	p = end + 1;
	for (n = 0, q = p; *q != '\0'; q++)
		n += *q == '+';
	cap = n != 0 ? n : 1;
	if ((d = malloc(cap * sizeof(*d))) == NULL) {
		snprintf(why, len, "no memory for the schedule");
		return (ENOMEM);
	}
	idx = UINT64_MAX;
	for (n = 0; *p != '\0'; n++) {
		if (*p != '+') {
			free(d);
			return (sc_chk_bad(s, p, "'+' (the next decision)",
			    why, len));
		}
		g = q = ++p;
		if (!sc_chk_num(&p, &gap) || gap == 0 || *p != '.') {
			free(d);
			return (sc_chk_bad(s, q, "a gap of 1 or more, then '.'",
			    why, len));
		}
		q = ++p;
		if (!sc_chk_num(&p, &alt) || alt == 0 || alt > 0xffff ||
		    (*p != '+' && *p != '\0')) {
			free(d);
			return (sc_chk_bad(s, q, "an alternative in 1..65535, "
			    "then '+' or the end", why, len));
		}
		idx += gap;
		if (idx >= *ndec) {
			free(d);
			return (sc_chk_bad(s, g, "a decision before the count "
			    "of decisions", why, len));
		}
		d[n].d_idx = idx;
		d[n].d_alt = (uint32_t)alt;
	}
	*dp = d;
	*np = n;
	return (0);
}
