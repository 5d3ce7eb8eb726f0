/*
 * Systematic testing: the shrinker (check_var.h).  From a failing
 * schedule, a shorter one that fails the same way: delta debugging
 * (Zeller and Hildebrandt, "Simplifying and Isolating Failure-Inducing
 * Input", TSE 2002) over the decisions that are not the default, then
 * each remaining alternative lowered.  A trial drops or lowers entries
 * and runs; the decisions after a changed one may fall elsewhere, so a
 * trial that fails is kept as the run recorded it, not as asked.  Better
 * is fewer deviations, then fewer decisions.
 *
 * No kernel counterpart.
 */
#include <stdlib.h>
#include <string.h>

#include "sc_internal.h"
#include "check_var.h"

/* Run the trial d[0..n); keep it if it fails as the kept run did, and is
 * better.  True if kept. */
static bool
sc_chk_try(struct sc_chk_ctx *x, const struct sc_chk_dec *d, size_t n)
{
	int cost, best;
	bool failed;

	if (sc__chk_run_list(x, d, n, false, &failed) != 0 || !failed ||
	    x->x_kind != x->x_fail_kind)
		return (false);
	cost = sc__chk_cost(x->x_c.c_out, x->x_c.c_nout);
	best = sc__chk_cost(x->x_fail, x->x_nfail);
	if (cost > best || (cost == best && x->x_c.c_ndec >= x->x_fail_ndec))
		return (false);
	return (sc__chk_keep(x) == 0);
}

uint64_t
sc__chk_shrink(struct sc_chk_ctx *x, uint64_t budget)
{
	struct sc_chk_dec *t;
	uint64_t runs = 0;
	size_t gran = 2, chunk, start, n, i, k;
	bool kept;

	/* A kept list has no more entries than deviations (each at least
	 * 1), and no more deviations than the first. */
	t = malloc(((size_t)sc__chk_cost(x->x_fail, x->x_nfail) + 1) *
	    sizeof(*t));
	if (t == NULL)
		return (0);
	/* ddmin: drop chunks of 1/gran of the list. */
	while (x->x_nfail != 0 && runs < budget) {
		n = x->x_nfail;
		if (gran > n)
			gran = n;
		chunk = (n + gran - 1) / gran;
		kept = false;
		for (start = 0; start < n && runs < budget; start += chunk) {
			for (k = 0, i = 0; i < n; i++)
				if (i < start || i >= start + chunk)
					t[k++] = x->x_fail[i];
			runs++;
			if ((kept = sc_chk_try(x, t, k)))
				break;
		}
		if (kept) {
			gran = gran > 2 ? gran - 1 : 2;
			continue;
		}
		if (chunk == 1)
			break;
		gran *= 2;
	}
	/* Each alternative lowered, one at a time, down to 1. */
	for (i = 0; i < x->x_nfail && runs < budget; i++) {
		if (x->x_fail[i].d_alt <= 1)
			continue;
		memcpy(t, x->x_fail, x->x_nfail * sizeof(*t));
		t[i].d_alt = 1;
		runs++;
		if (sc_chk_try(x, t, x->x_nfail))
			i = (size_t)-1;		/* from the start again */
	}
	free(t);
	return (runs);
}
