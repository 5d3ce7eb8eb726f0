/*
 * The walker's two pure checks, inline: the walker makes both once per
 * frame.  frame_bounds.c builds their public forms, sc_frame_in_range()
 * and sc_pc_in_text(), from these same definitions.
 *
 * Kernel counterparts: kstack_contains() (sys/amd64/include/stack.h) and
 * INKERNEL() (sys/amd64/include/param.h).
 */
#ifndef SC_FRAME_BOUNDS_H
#define SC_FRAME_BOUNDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stackcap.h"

/*
 * kstack_contains(): the 16-byte frame record at fp lies inside [lo, hi),
 * written so that nothing overflows.
 */
static inline bool
sc__kstack_contains(uintptr_t fp, struct sc_range r)
{
	if (r.hi < r.lo || r.hi - r.lo < 16)
		return (false);
	return (fp >= r.lo && fp <= r.hi - 16);
}

/*
 * INKERNEL(): a binary search of text[0..ntext) (sorted, not
 * overlapping) for pc; on a hit, *hitp is the range that holds it, which
 * the walker keeps as a one-entry cache.
 */
static inline bool
sc__text_lookup(uintptr_t pc, const struct sc_range *text, size_t ntext,
    struct sc_range *hitp)
{
	size_t lo = 0, hi = ntext, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (pc < text[mid].lo)
			hi = mid;
		else if (pc >= text[mid].hi)
			lo = mid + 1;
		else {
			*hitp = text[mid];
			return (true);
		}
	}
	return (false);
}

#endif /* !SC_FRAME_BOUNDS_H */
