/*
 * The protocol trace as an SVG picture (sc_trace_write_svg()): a sequence
 * diagram of the handshake.
 *
 * No kernel counterpart (see trace.c).  The layout makes overlaps
 * impossible rather than unlikely: time runs down, one row per event in
 * the ring's order, and every row's label is in a column of its own, on
 * the right, in the kernel's words (trace.c's narration is each mark's
 * tooltip).  Rows are not spaced by time: the events of one handshake lie
 * within a microsecond and the waits between them last milliseconds, so a
 * linear axis would pile the labels up.  The time column gives each row's
 * time as the narrated text does, and a gap of more than SV_GAP_NS gets a
 * band of its own that says how long it was.
 *
 * Lanes are columns: one per CPU, with the slices of the threads that ran
 * there (from SWITCH: who ran before a CPU's first switch is that
 * switch's old thread, or its idle thread), and one per requester on a
 * plain pthread, by the Linux tid that its records carry (host_tid).  A
 * requester that is a simulated thread draws on its CPU's lane.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sc_internal.h"
#include "trace_svg.h"

/*
 * Requester lane number q is lane ncpu + q: one per plain pthread, by the
 * Linux tid its records carry, in the order of their first events (past
 * SV_MAXREQ, the last lane takes the rest).
 */
static int
sc_svg_req_lane(struct sc_svg *sv, const struct sc_trace_record *r)
{
	return (sv->sv_ncpu + sc__trace_requester(sv->sv_req_host,
	    &sv->sv_nreq, SV_MAXREQ, r->host_tid));
}

/* A record's lane, or -1 for one that has no row (STATE). */
static int
sc_svg_lane(struct sc_svg *sv, const struct sc_trace_record *r)
{
	bool oncpu = r->cpu >= 0 && r->cpu < sv->sv_ncpu;

	if (r->event == SC_TRACE_STATE)
		return (-1);
	if (oncpu)
		return (r->cpu);
	if (sc__trace_capture_step(r->event) ||
	    sc__trace_snapshot_step(r->event) ||
	    r->event == SC_TRACE_THREAD_REUSE || r->event == SC_TRACE_SWAP)
		return (sc_svg_req_lane(sv, r));
	return (-1);
}

static void
sc_svg_span(struct sc_svg *sv, int kind, int lane, size_t row0, size_t row1,
    int tid)
{
	struct sc_svg_span *sp = &sv->sv_spans[sv->sv_nspans++];

	sp->sp_kind = kind;
	sp->sp_lane = lane;
	sp->sp_row0 = row0;
	sp->sp_row1 = row1;
	sp->sp_tid = tid;
	sp->sp_top = false;
}

/* What ran on cpu until row: close its slice there. */
static void
sc_svg_slice_end(struct sc_svg *sv, int cpu, size_t row)
{
	if (sv->sv_cur[cpu] == 0)
		return;
	sc_svg_span(sv, SV_SLICE, cpu, sv->sv_cur_row[cpu], row,
	    sv->sv_cur[cpu]);
	sv->sv_spans[sv->sv_nspans - 1].sp_top = sv->sv_cur_top[cpu];
	sv->sv_cur_top[cpu] = false;
}

/* The handler's span on cpu (IPI_RECEIVED to its last step). */
static void
sc_svg_handler_end(struct sc_svg *sv, int cpu)
{
	if (sv->sv_h_open[cpu] >= 0)
		sc_svg_span(sv, SV_HANDLER, cpu, (size_t)sv->sv_h_open[cpu],
		    sv->sv_h_last[cpu], 0);
	sv->sv_h_open[cpu] = -1;
}

/* Slices, handler spans and capture spans, from the rows in order. */
static void
sc_svg_spans(struct sc_svg *sv)
{
	const struct sc_trace_record *r;
	size_t i, row;
	int c, lane, j;

	for (c = 0; c < sv->sv_ncpu; c++) {
		sv->sv_cur[c] = 0;
		sv->sv_h_open[c] = -1;
	}
	for (i = 0; i < sv->sv_nrows; i++) {
		row = i;
		r = &sv->sv_recs[sv->sv_rowrec[i]];
		lane = sv->sv_lane[sv->sv_rowrec[i]];
		if (lane < sv->sv_ncpu) {
			c = lane;
			if (sv->sv_cur[c] == 0 &&
			    (r->event == SC_TRACE_SWITCH ||
			    r->event == SC_TRACE_IPI_RECEIVED)) {
				/* It ran since the top. */
				sv->sv_cur[c] = r->tid;
				sv->sv_cur_row[c] = 0;
				sv->sv_cur_top[c] = true;
			}
			if (r->event == SC_TRACE_SWITCH) {
				sc_svg_slice_end(sv, c, row);
				sv->sv_cur[c] = (int)r->arg0;
				sv->sv_cur_row[c] = row;
			}
			if (r->event == SC_TRACE_IPI_RECEIVED) {
				sc_svg_handler_end(sv, c);
				sv->sv_h_open[c] = (long)row;
				sv->sv_h_last[c] = row;
			} else if (sv->sv_h_open[c] >= 0 &&
			    (r->event == SC_TRACE_WALK_DONE ||
			    r->event == SC_TRACE_ANSWER_PUBLISHED ||
			    r->event == SC_TRACE_STALE_IPI))
				sv->sv_h_last[c] = row;
			else
				sc_svg_handler_end(sv, c);
			continue;
		}
		if (r->event == SC_TRACE_CAPTURE_BEGIN ||
		    r->event == SC_TRACE_SNAPSHOT_BEGIN)
			sv->sv_open_row[i] = (long)row;
		if (r->event != SC_TRACE_CAPTURE_DONE &&
		    r->event != SC_TRACE_SNAPSHOT_DONE)
			continue;
		/* The latest open begin of this lane and target. */
		for (j = (int)i - 1; j >= 0; j--) {
			const struct sc_trace_record *b =
			    &sv->sv_recs[sv->sv_rowrec[j]];

			if (sv->sv_open_row[j] < 0 ||
			    sv->sv_lane[sv->sv_rowrec[j]] != lane)
				continue;
			if (r->event == SC_TRACE_SNAPSHOT_DONE ?
			    b->event == SC_TRACE_SNAPSHOT_BEGIN :
			    b->event == SC_TRACE_CAPTURE_BEGIN &&
			    b->tid == r->tid)
				break;
		}
		if (j < 0)
			continue;	/* its begin is not in the ring */
		sc_svg_span(sv, r->event == SC_TRACE_CAPTURE_DONE ? SV_CAPTURE :
		    SV_SNAPSHOT, lane, (size_t)sv->sv_open_row[j], row, r->tid);
		sv->sv_open_row[j] = -1;
	}
	for (c = 0; c < sv->sv_ncpu; c++) {
		sc_svg_handler_end(sv, c);
		if (sv->sv_cur[c] == 0 && sv->sv_idle[c] != 0) {
			/* Never switched: its idle thread ran all along. */
			sv->sv_cur[c] = sv->sv_idle[c];
			sv->sv_cur_row[c] = 0;
			sv->sv_cur_top[c] = true;
		}
		sc_svg_slice_end(sv, c, sv->sv_nrows);
	}
}

/*
 * Each IPI_SENT's arrow: to the IPI_RECEIVED of its id, the first after it
 * (or before it: a handler that read the id of an IPI sent while it ran),
 * or to the bottom of its target's lane when the ring has none.
 */
static void
sc_svg_arrows(struct sc_svg *sv)
{
	const struct sc_trace_record *s, *r;
	struct sc_svg_arrow *a;
	size_t i, j;
	long best;

	for (i = 0; i < sv->sv_nrows; i++) {
		s = &sv->sv_recs[sv->sv_rowrec[i]];
		if (s->event != SC_TRACE_IPI_SENT)
			continue;
		best = -1;
		for (j = 0; j < sv->sv_nrows; j++) {
			r = &sv->sv_recs[sv->sv_rowrec[j]];
			if (r->event != SC_TRACE_IPI_RECEIVED ||
			    r->arg1 != s->arg1)
				continue;
			if (best < 0 || (j > i && (size_t)best < i))
				best = (long)j;
			if (j > i)
				break;
		}
		a = &sv->sv_arrows[sv->sv_narrows++];
		a->ar_from = i;
		a->ar_to = best;
		a->ar_ipi = s->arg1;
		a->ar_cpu = s->arg0 < (uint64_t)sv->sv_ncpu ? (int)s->arg0 :
		    -1;
	}
}

/*
 * An answer seen that no handler published since the IPI sent for it: the
 * answer word held an old answer (SC_MISTAKE_STALE_ANSWER).  The kernel's
 * words say "answer names td N, the target"; the picture says more.
 */
static void
sc_svg_old_answers(struct sc_svg *sv)
{
	const struct sc_trace_record *r, *b;
	size_t i;
	long j;

	for (i = 0; i < sv->sv_nrows; i++) {
		r = &sv->sv_recs[sv->sv_rowrec[i]];
		if (r->event != SC_TRACE_ANSWER_SEEN ||
		    r->arg0 != (uint64_t)r->tid)
			continue;
		for (j = (long)i - 1; j >= 0; j--) {
			b = &sv->sv_recs[sv->sv_rowrec[j]];
			if (b->tid == r->tid &&
			    (b->event == SC_TRACE_ANSWER_PUBLISHED ||
			    b->event == SC_TRACE_IPI_SENT))
				break;
		}
		sv->sv_old[i] = j >= 0 &&
		    sv->sv_recs[sv->sv_rowrec[j]].event == SC_TRACE_IPI_SENT;
	}
}

int
sc_trace_write_svg(struct sc_machine *m, FILE *fp, const char *title)
{
	struct sc_svg sv;
	double *row_y = NULL;
	size_t i, n = 0;
	int c, error = ENOMEM;

	memset(&sv, 0, sizeof(sv));
	if ((sv.sv_recs = sc__trace_take(m, &n)) == NULL)
		return (m->m_trace == NULL ? ENOENT : ENOMEM);
	sv.sv_n = n;
	sv.sv_base = sc__trace_base(sv.sv_recs, n);
	sv.sv_ncpu = m->m_ncpu;
	sv.sv_title = title;
	sv.sv_lane = calloc(n + 1, sizeof(*sv.sv_lane));
	sv.sv_rowrec = calloc(n + 1, sizeof(*sv.sv_rowrec));
	sv.sv_open_row = calloc(n + 1, sizeof(*sv.sv_open_row));
	sv.sv_old = calloc(n + 1, sizeof(*sv.sv_old));
	sv.sv_spans = calloc(2 * n + 2 * (size_t)sv.sv_ncpu + 1,
	    sizeof(*sv.sv_spans));
	sv.sv_arrows = calloc(n + 1, sizeof(*sv.sv_arrows));
	sv.sv_cur = calloc((size_t)sv.sv_ncpu, sizeof(*sv.sv_cur));
	sv.sv_idle = calloc((size_t)sv.sv_ncpu, sizeof(*sv.sv_idle));
	sv.sv_cur_row = calloc((size_t)sv.sv_ncpu, sizeof(*sv.sv_cur_row));
	sv.sv_cur_top = calloc((size_t)sv.sv_ncpu, sizeof(*sv.sv_cur_top));
	sv.sv_h_open = calloc((size_t)sv.sv_ncpu, sizeof(*sv.sv_h_open));
	sv.sv_h_last = calloc((size_t)sv.sv_ncpu, sizeof(*sv.sv_h_last));
	if (sv.sv_lane == NULL || sv.sv_rowrec == NULL ||
	    sv.sv_open_row == NULL || sv.sv_old == NULL ||
	    sv.sv_spans == NULL ||
	    sv.sv_arrows == NULL || sv.sv_cur == NULL || sv.sv_idle == NULL ||
	    sv.sv_cur_row == NULL || sv.sv_cur_top == NULL ||
	    sv.sv_h_open == NULL ||
	    sv.sv_h_last == NULL || sc__trace_names_get(m, &sv.sv_names) != 0)
		goto out;
	for (c = 0; c < sv.sv_ncpu; c++)
		sv.sv_idle[c] =
		    atomic_load(&m->m_pcpu[c].pc_idlethread->td_tid);
	for (i = 0; i < n; i++) {
		sv.sv_lane[i] = sc_svg_lane(&sv, &sv.sv_recs[i]);
		if (sv.sv_lane[i] >= 0) {
			sv.sv_open_row[sv.sv_nrows] = -1;
			sv.sv_rowrec[sv.sv_nrows++] = i;
		}
	}
	if ((row_y = calloc(sv.sv_nrows + 1, sizeof(*row_y))) == NULL)
		goto out;
	sc_svg_spans(&sv);
	sc_svg_arrows(&sv);
	sc_svg_old_answers(&sv);
	sc__svg_draw(&sv, fp, row_y);
	error = ferror(fp) ? EIO : 0;
out:
	free(row_y);
	free(sv.sv_h_last);
	free(sv.sv_h_open);
	free(sv.sv_cur_top);
	free(sv.sv_cur_row);
	free(sv.sv_idle);
	free(sv.sv_cur);
	free(sv.sv_arrows);
	free(sv.sv_spans);
	free(sv.sv_old);
	free(sv.sv_open_row);
	free(sv.sv_rowrec);
	free(sv.sv_lane);
	sc__trace_names_free(&sv.sv_names);
	free(sv.sv_recs);
	return (error);
}
