/*
 * Systematic testing: the shrinker (check_var.h).  From a failing
 * schedule, a shorter one that fails the same way, in four passes: the
 * shortest prefix of its deviations that still fails (the rest
 * default); delta debugging (Zeller and Hildebrandt, "Simplifying and
 * Isolating Failure-Inducing Input", TSE 2002) over the deviations that
 * remain; each alternative lowered; then DFS from the default schedule
 * with bounds 1, 2, 3 below what is left, which finds a schedule with
 * the fewest deviations if one is within the budget.  A trial drops or
 * lowers entries and runs; the decisions after a changed one may fall
 * elsewhere (one deviation less, and the run goes another way), so a
 * trial that fails is kept as the run recorded it, not as asked, and
 * removing one deviation often takes others with it, or brings new ones.
 * Better is fewer deviations, then fewer decisions.
 *
 * No kernel counterpart.
 */
#include <stdlib.h>
#include <string.h>

#include "sc_internal.h"
#include "check_var.h"

/* DFS's bounds, 1 to this many. */
#define SC_CHK_SHRINK_DFS	3
/* More deviations than this left after the prefix: DFS first. */
#define SC_CHK_SHRINK_MANY	8

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

/*
 * DFS from the default schedule within 1, 2, 3 deviations, below the
 * kept run's: keeps the first failure found (the fewest deviations
 * there are), at most budget runs.  Returns the runs made.
 */
static uint64_t
sc_chk_shrink_dfs(struct sc_chk_ctx *x, uint64_t budget)
{
	uint64_t runs = 0;
	bool failed, complete;
	int bound;

	for (bound = 1; bound <= SC_CHK_SHRINK_DFS && runs < budget &&
	    bound < sc__chk_cost(x->x_fail, x->x_nfail); bound++) {
		if (sc__chk_dfs(x, bound, 0, 1, budget, 0, &runs, &failed,
		    &complete) != 0)
			break;
		if (failed && x->x_kind == x->x_fail_kind) {
			(void)sc__chk_keep(x);
			break;
		}
	}
	return (runs);
}

uint64_t
sc__chk_shrink(struct sc_chk_ctx *x, uint64_t budget)
{
	struct sc_chk_dec *t;
	uint64_t runs = 0;
	size_t gran = 2, chunk, start, n, i, k, lo, hi, mid;
	bool kept, dfs_done = false;

	/* A kept list has no more entries than deviations (each at least
	 * 1), and no more deviations than the first. */
	t = malloc(((size_t)sc__chk_cost(x->x_fail, x->x_nfail) + 1) *
	    sizeof(*t));
	if (t == NULL)
		return (0);
	/* The shortest prefix that fails: fewer is never worse. */
	lo = 0;
	hi = x->x_nfail;
	while (lo < hi && runs < budget) {
		mid = lo + (hi - lo) / 2;
		memcpy(t, x->x_fail, mid * sizeof(*t));
		runs++;
		if (sc_chk_try(x, t, mid))
			hi = x->x_nfail < mid ? x->x_nfail : mid;
		else
			lo = mid + 1;
	}
	/* Still many deviations after the prefix: DFS first, with half
	 * of the budget, for ddmin from many rarely comes down to a few
	 * (nocpu-offcpu's 60 to 21, which needs 2), and DFS finds a few
	 * if there are, within its budget; ddmin then has the rest. */
	if (sc__chk_cost(x->x_fail, x->x_nfail) > SC_CHK_SHRINK_MANY) {
		runs += sc_chk_shrink_dfs(x, (budget - runs) / 2);
		dfs_done = true;
	}
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
	/* Fewer deviations than are left, by DFS, if not tried yet. */
	if (!dfs_done)
		runs += sc_chk_shrink_dfs(x, budget - runs);
	return (runs);
}
