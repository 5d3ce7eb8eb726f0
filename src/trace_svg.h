/*
 * What the two halves of sc_trace_write_svg() share: the layout that
 * trace_svg.c derives from the trace (lanes, rows, spans, arrows), and
 * the drawing of it in trace_svg_draw.c.  Nothing here outlives the call:
 * every field is the calling thread's own.
 */
#ifndef SC_TRACE_SVG_H
#define SC_TRACE_SVG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "stackcap.h"
#include "trace_names.h"

#define SV_MAXREQ	8	/* requester lanes; more share the last */

enum { SV_SLICE, SV_HANDLER, SV_CAPTURE, SV_SNAPSHOT };

/* A bar on a lane, from the center of row sp_row0 to that of sp_row1
 * (sp_row1 == the number of rows: to the bottom). */
struct sc_svg_span {
	int		sp_kind;	/* SV_* */
	int		sp_lane;
	size_t		sp_row0, sp_row1;
	bool		sp_top;		/* runs since before the first row */
	int		sp_tid;		/* the thread (slice), the target */
};

/* An IPI: from its IPI_SENT's row to its IPI_RECEIVED's (-1: none in the
 * ring; then to the bottom of lane ar_cpu). */
struct sc_svg_arrow {
	size_t		ar_from;
	long		ar_to;
	uint64_t	ar_ipi;
	int		ar_cpu;		/* its target CPU, or -1 */
};

struct sc_svg {
	struct sc_trace_record *sv_recs;
	size_t		sv_n;
	uint64_t	sv_base;	/* earliest ts: time 0 */
	const char	*sv_title;	/* or NULL */
	int		sv_ncpu;	/* lanes 0..ncpu-1 are the CPUs */
	int		sv_nreq;	/* then the requester lanes */
	int		sv_req_host[SV_MAXREQ]; /* their plain pthreads'
					   Linux tids */
	int		*sv_lane;	/* [n] a record's lane, -1: no row */
	size_t		*sv_rowrec;	/* [nrows] the record of each row */
	size_t		sv_nrows;
	long		*sv_open_row;	/* [nrows] an unmatched begin */
	bool		*sv_old;	/* [nrows] an ANSWER_SEEN with no
					   answer published since its IPI */
	struct sc_svg_span	*sv_spans;
	size_t		sv_nspans;
	struct sc_svg_arrow	*sv_arrows;
	size_t		sv_narrows;
	struct sc_trace_names	sv_names;
	int		*sv_idle;	/* [ncpu] idle thread's tid */
	int		*sv_cur;	/* [ncpu] thread on it (0: unknown) */
	size_t		*sv_cur_row;	/* [ncpu] since that row */
	bool		*sv_cur_top;	/* [ncpu] since before the first */
	long		*sv_h_open;	/* [ncpu] handler's first row, or -1 */
	size_t		*sv_h_last;	/* [ncpu] its last row so far */
};

/* trace_svg_draw.c: write the picture of sv to fp; row_y has room for
 * sv_nrows + 1 doubles. */
void	sc__svg_draw(const struct sc_svg *sv, FILE *fp, double *row_y);

#endif /* !SC_TRACE_SVG_H */
