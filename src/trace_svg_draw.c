/*
 * The drawing of sc_trace_write_svg()'s picture (the layout is
 * trace_svg.c's): a title, a legend, lane headers, then per row its time,
 * its mark on its lane and its label in the kernel's words; slices,
 * handler and capture bars under the marks, the IPIs' arrows over them.
 *
 * Self-contained SVG 1.1: no script, no external reference, generic font
 * families only.  Text is sized by a fixed estimate of SV_CHAR_W pixels a
 * character (11 px DejaVu Sans is 6.4 on average, bold 7), and every label that
 * shares a column with others is cut to the column's width, so none can
 * overlap another.  Classes and data- attributes name what tests look
 * for: class="lane" data-lane="cpu0", class="ipi" data-ipi="N", a label's
 * class its kind (retry, nocpu, error, ok...).
 */
#include <inttypes.h>
#include <string.h>

#include "sc_internal.h"
#include "trace_svg.h"

#define SV_MARGIN	16
#define SV_ROW_H	18	/* a row */
#define SV_GAP_H	18	/* the band of a long gap */
#define SV_GAP_NS	1000000	/* a gap longer than 1 ms gets a band */
#define SV_TIME_W	84	/* the time column */
#define SV_LANE_W	180
#define SV_BAR_X	16	/* a bar's left edge in its lane */
#define SV_BAR_W	12
#define SV_MARK_X	(SV_BAR_X + SV_BAR_W / 2)
#define SV_TEXT_X	(SV_BAR_X + SV_BAR_W + 6) /* a bar's label */
#define SV_CHAR_W	6.9
#define SV_TITLE_W	8.4	/* a character of the title, 14 px bold */
#define SV_LABEL_MAX	120	/* characters of a row's label */
#define SV_LABEL_BUF	320	/* its buffer: more than a lane and a step */
#define SV_FONT		"DejaVu Sans, Verdana, Arial, sans-serif"

/* A label's kind: its color, its mark, its class. */
enum { SV_K_STEP, SV_K_OK, SV_K_RETRY, SV_K_NOCPU, SV_K_ERROR, SV_K_STALE,
	SV_K_DEFER, SV_K_SWITCH, SV_K_IPI, SV_K_NKINDS };

static const struct {
	const char	*k_class;
	const char	*k_color;
	const char	*k_legend;
} sc_svg_kinds[SV_K_NKINDS] = {
	[SV_K_STEP] = { "step", "#34495e", "a step" },
	[SV_K_OK] = { "ok", "#1e8449", "the answer: the target's stack" },
	[SV_K_RETRY] = { "retry", "#d35400", "retry: another thread answered" },
	[SV_K_NOCPU] = { "nocpu", "#7d3c98", "td_oncpu NOCPU: spin, no IPI" },
	[SV_K_ERROR] = { "error", "#c0392b", "an error (EBUSY, ETIMEDOUT...)" },
	[SV_K_STALE] = { "stale", "#7f8c8d", "a stale IPI: nothing done" },
	[SV_K_DEFER] = { "deferred", "#b9770e",
	    "interrupts disabled: IPI pending" },
	[SV_K_SWITCH] = { "switch", "#17202a", "cpu_switch" },
	[SV_K_IPI] = { "ipi", "#1f3a93", "ipi_cpu(): the IPI sent" },
};

/* Layout in pixels, fixed before the first element is written. */
struct sc_svg_geo {
	double		g_width, g_height;
	double		g_lanes_x;	/* lane 0's left edge */
	double		g_label_x;	/* the label column */
	double		g_head_y;	/* the lane headers' baseline */
	double		g_top_y;	/* the "since the start" row */
	double		*g_row_y;	/* [nrows + 1] a row's center; the
					   last: the bottom */
	double		g_legend_y;
	int		g_nlanes;
};

static void
sc_svg_esc(FILE *fp, const char *s)
{
	for (; *s != '\0'; s++)
		switch (*s) {
		case '&': fputs("&amp;", fp); break;
		case '<': fputs("&lt;", fp); break;
		case '>': fputs("&gt;", fp); break;
		case '"': fputs("&quot;", fp); break;
		default:
			if ((unsigned char)*s >= 0x20)
				fputc(*s, fp);
		}
}

/* s cut to max characters (a "..." in the cut's place). */
static void
sc_svg_cut(char *s, size_t max)
{
	if (max >= 4 && strlen(s) > max)
		strcpy(s + max - 3, "...");
}

static void
sc_svg_tdname(const struct sc_svg *sv, int tid, char *buf, size_t len)
{
	const struct sc_trace_name *nm = sc__trace_name(&sv->sv_names, tid);

	if (nm != NULL && nm->nm_name[0] != '\0')
		snprintf(buf, len, "%s", nm->nm_name);
	else
		snprintf(buf, len, "td %d", tid);
}

static void
sc_svg_lane_name(const struct sc_svg *sv, int lane, char *buf, size_t len)
{
	if (lane < sv->sv_ncpu)
		snprintf(buf, len, "cpu%d", lane);
	else
		snprintf(buf, len, "requester %d", lane - sv->sv_ncpu + 1);
}

/*
 * A row's label: the step in the kernel's words, shorter than trace.c's
 * narration (which is its tooltip), and its kind.
 */
static int
sc_svg_label(const struct sc_svg *sv, size_t row, char *buf, size_t len)
{
	const struct sc_trace_record *r = &sv->sv_recs[sv->sv_rowrec[row]];
	char a[40], b[40];

	switch (r->event) {
	case SC_TRACE_CAPTURE_BEGIN:
		snprintf(buf, len, "stack_save_td(td %d), thread lock held",
		    r->tid);
		return (SV_K_STEP);
	case SC_TRACE_PCB_WALK:
		snprintf(buf, len, "td %d not running: walk from its pcb_rbp, "
		    "%" PRIu64 " frames", r->tid, r->arg0);
		return (SV_K_OK);
	case SC_TRACE_LOCK_DROPPED:
		snprintf(buf, len, "td %d running: thread_unlock(td %d)",
		    r->tid, r->tid);
		return (SV_K_STEP);
	case SC_TRACE_LOCK_TAKEN:
		snprintf(buf, len, "thread_lock(td %d)", r->tid);
		return (SV_K_STEP);
	case SC_TRACE_NOCPU:
		if (r->arg0 == 0)
			snprintf(buf, len, "td %d RUNNING, td_oncpu NOCPU: "
			    "spin, no IPI", r->tid);
		else
			snprintf(buf, len, "td %d has td_oncpu cpu%" PRIu64
			    " after %" PRIu64 " spins on NOCPU", r->tid,
			    r->arg1, r->arg0);
		return (SV_K_NOCPU);
	case SC_TRACE_IPI_SENT:
		snprintf(buf, len, "ipi_cpu(cpu%" PRIu64 ", IPI_TRACE) for "
		    "td %d [ipi %" PRIu64 "]", r->arg0, r->tid, r->arg1);
		return (SV_K_IPI);
	case SC_TRACE_IPI_DEFERRED:
		snprintf(buf, len, "IPI with interrupts disabled (td %d): "
		    "pending until spinlock_exit()", r->tid);
		return (SV_K_DEFER);
	case SC_TRACE_IPI_RECEIVED:
		sc_svg_tdname(sv, r->tid, a, sizeof(a));
		snprintf(buf, len, "IPI_TRACE received, interrupts td %d (%s) "
		    "[ipi %" PRIu64 "]", r->tid, a, r->arg1);
		return (SV_K_STEP);
	case SC_TRACE_WALK_DONE:
		if (r->arg0 != 0)
			snprintf(buf, len, "walked td %d's kernel stack: "
			    "%" PRIu64 " frames", r->tid, r->arg0);
		else
			snprintf(buf, len, "walked 0 frames of td %d (%s)",
			    r->tid, r->arg1 == 0 ? "user mode" :
			    "no frame chain from %rbp");
		return (SV_K_STEP);
	case SC_TRACE_ANSWER_PUBLISHED:
		snprintf(buf, len, "stack_intr_td = td %d, requester woken",
		    r->tid);
		return (SV_K_STEP);
	case SC_TRACE_STALE_IPI:
		snprintf(buf, len, "IPI_TRACE finds no open request: nothing "
		    "done (stale IPI)");
		return (SV_K_STALE);
	case SC_TRACE_ANSWER_SEEN:
		if (r->arg0 == (uint64_t)r->tid && sv->sv_old[row]) {
			snprintf(buf, len, "answer names td %" PRIu64 ", the "
			    "target, but no handler published one since the "
			    "IPI: an old answer", r->arg0);
			return (SV_K_ERROR);
		}
		if (r->arg0 == (uint64_t)r->tid) {
			snprintf(buf, len, "answer names td %" PRIu64 ", the "
			    "target", r->arg0);
			return (SV_K_OK);
		}
		snprintf(buf, len, "stack_intr_td == td, but its struct was "
		    "reused: td %" PRIu64 "'s stack taken for td %d's", r->arg0,
		    r->tid);
		return (SV_K_ERROR);
	case SC_TRACE_RETRY:
		snprintf(buf, len, "answer names td %" PRIu64 ", not td %d: "
		    "retry (%s)", r->arg0, r->tid, r->arg1 == 1 ?
		    "the CPU went idle" : "another thread runs there");
		return (SV_K_RETRY);
	case SC_TRACE_TIMEOUT:
		snprintf(buf, len, "no answer within %" PRIu64 " ms: give up, "
		    "ETIMEDOUT", r->arg0 / 1000000);
		return (SV_K_ERROR);
	case SC_TRACE_CAPTURE_DONE:
		snprintf(buf, len, "stack_save_td(td %d) returns %s, %" PRIu64
		    " frames", r->tid, sc_errname((int)r->arg0), r->arg1);
		return (r->arg0 == 0 ? SV_K_OK : SV_K_ERROR);
	case SC_TRACE_SWITCH:
		sc_svg_tdname(sv, r->tid, a, sizeof(a));
		sc_svg_tdname(sv, (int)r->arg0, b, sizeof(b));
		snprintf(buf, len, "cpu_switch from td %d (%s) to td %" PRIu64
		    " (%s)", r->tid, a, r->arg0, b);
		return (SV_K_SWITCH);
	case SC_TRACE_PREEMPT:
		snprintf(buf, len, "td %d preempted, mi_switch(SW_INVOL): %s",
		    r->tid, r->arg0 != 0 ? "its time slice is spent" :
		    "owed, at a safe point");
		return (SV_K_SWITCH);
	case SC_TRACE_THREAD_REUSE:
		snprintf(buf, len, "thread_alloc(): td %d takes td %" PRIu64
		    "'s struct (generation %" PRIu64 ")", r->tid, r->arg0,
		    r->arg1);
		return (SV_K_ERROR);
	case SC_TRACE_SWAP:
		snprintf(buf, len, "td %d: %s", r->tid, r->arg0 != 0 ?
		    "vm_thread_swapout(): kernel stack unmapped" :
		    "vm_thread_swapin()");
		return (SV_K_STEP);
	case SC_TRACE_SNAPSHOT_BEGIN:
		snprintf(buf, len, "sc_machine_snapshot(): %" PRIu64
		    " threads listed", r->arg0);
		return (SV_K_STEP);
	case SC_TRACE_SNAPSHOT_ROUND:
		snprintf(buf, len, "snapshot round %" PRIu64 ": IPI_TRACE to "
		    "%" PRIu64 " CPU%s at once", r->arg0, r->arg1,
		    r->arg1 == 1 ? "" : "s");
		return (SV_K_STEP);
	case SC_TRACE_SNAPSHOT_DONE:
		snprintf(buf, len, "snapshot of %" PRIu64 " threads done in "
		    "%" PRIu64 " round%s", r->arg0, r->arg1,
		    r->arg1 == 1 ? "" : "s");
		return (SV_K_OK);
	default:
		snprintf(buf, len, "%s", sc_trace_event_name(r->event));
		return (SV_K_STEP);
	}
}

/* The row label with its lane, as the narrated text has it ("cpu0: "). */
static int
sc_svg_row_label(const struct sc_svg *sv, size_t row, char *buf, size_t len)
{
	char lane[24], text[256];
	int kind;

	kind = sc_svg_label(sv, row, text, sizeof(text));
	sc_svg_lane_name(sv, sv->sv_lane[sv->sv_rowrec[row]], lane,
	    sizeof(lane));
	snprintf(buf, len, "%s: %s", lane, text);
	sc_svg_cut(buf, SV_LABEL_MAX);
	return (kind);
}

static double
sc_svg_lane_x(const struct sc_svg_geo *g, int lane)
{
	return (g->g_lanes_x + lane * SV_LANE_W);
}

static void
sc_svg_layout(const struct sc_svg *sv, struct sc_svg_geo *g)
{
	char label[SV_LABEL_BUF];
	size_t i, maxlen = 40;
	double y;

	g->g_nlanes = sv->sv_ncpu + sv->sv_nreq;
	g->g_lanes_x = SV_MARGIN + SV_TIME_W;
	g->g_label_x = sc_svg_lane_x(g, g->g_nlanes) + 12;
	for (i = 0; i < sv->sv_nrows; i++) {
		sc_svg_row_label(sv, i, label, sizeof(label));
		if (strlen(label) > maxlen)
			maxlen = strlen(label);
	}
	g->g_width = g->g_label_x + maxlen * SV_CHAR_W + SV_MARGIN;
	if (g->g_width < 1100)
		g->g_width = 1100;	/* the legend's first row */
	if (sv->sv_title != NULL &&
	    g->g_width < 2 * SV_MARGIN + strlen(sv->sv_title) * SV_TITLE_W)
		g->g_width = 2 * SV_MARGIN + strlen(sv->sv_title) * SV_TITLE_W;
	g->g_legend_y = 62;
	g->g_head_y = g->g_legend_y + 3 * SV_ROW_H + 20;
	g->g_top_y = g->g_head_y + SV_ROW_H + 8;
	y = g->g_top_y;
	for (i = 0; i < sv->sv_nrows; i++) {
		if (i > 0 && sv->sv_recs[sv->sv_rowrec[i]].ts_ns >
		    sv->sv_recs[sv->sv_rowrec[i - 1]].ts_ns + SV_GAP_NS)
			y += SV_GAP_H;
		y += SV_ROW_H;
		g->g_row_y[i] = y;
	}
	g->g_row_y[sv->sv_nrows] = y + SV_ROW_H;
	g->g_height = g->g_row_y[sv->sv_nrows] + 2 * SV_MARGIN;
}

/* The y where a span starts: its row's center, or the start row. */
static double
sc_svg_span_y0(const struct sc_svg_geo *g, const struct sc_svg_span *sp)
{
	return (sp->sp_top ? g->g_top_y - SV_ROW_H / 2 :
	    g->g_row_y[sp->sp_row0]);
}

/* A thread's slice color: the idle threads grey, the others by tid. */
static const char *
sc_svg_slice_color(const struct sc_svg *sv, int tid)
{
	/* Not the handler's orange, the capture's blue, the snapshot's
	 * violet. */
	static const char *const pal[] = { "#82c99a", "#f7dc6f", "#a3e4d7",
	    "#edbb99", "#c5e1a5", "#d7ccc8", "#b2dfdb", "#f5b7b1" };
	const struct sc_trace_name *nm = sc__trace_name(&sv->sv_names, tid);

	if (nm != NULL && nm->nm_idle)
		return ("#d5d8dc");
	return (pal[(unsigned)tid % (sizeof(pal) / sizeof(pal[0]))]);
}

/* A row's mark, centered on (x, y). */
static void
sc_svg_mark(FILE *fp, int kind, double x, double y)
{
	const char *c = sc_svg_kinds[kind].k_color;

	switch (kind) {
	case SV_K_RETRY:
	case SV_K_NOCPU:
		fprintf(fp, "<path d=\"M%g %gl5 5l-5 5l-5 -5z\" fill=\"%s\"/>",
		    x, y - 5, c);
		break;
	case SV_K_STALE:
		fprintf(fp, "<path d=\"M%g %gl8 8m0 -8l-8 8\" stroke=\"%s\" "
		    "stroke-width=\"2\"/>", x - 4, y - 4, c);
		break;
	case SV_K_DEFER:
		fprintf(fp, "<circle cx=\"%g\" cy=\"%g\" r=\"4\" fill=\"#fff\" "
		    "stroke=\"%s\" stroke-width=\"2\"/>", x, y, c);
		break;
	case SV_K_SWITCH:
		fprintf(fp, "<path d=\"M%g %gh18\" stroke=\"%s\" "
		    "stroke-width=\"2.5\"/>", x - 9, y, c);
		break;
	default:
		fprintf(fp, "<circle cx=\"%g\" cy=\"%g\" r=\"%d\" "
		    "fill=\"%s\"/>", x, y, kind == SV_K_STEP ? 3 : 4, c);
	}
}

/* The legend: the bars, the arrow, each kind of mark (the rows fixed:
 * three of them, g_head_y below). */
static void
sc_svg_legend(FILE *fp, const struct sc_svg_geo *g)
{
	static const int marks[] = { SV_K_OK, SV_K_RETRY, -1, SV_K_NOCPU,
	    SV_K_ERROR, SV_K_STALE, SV_K_DEFER, SV_K_SWITCH };
	double x = SV_MARGIN, y = g->g_legend_y;
	size_t i;

	fprintf(fp, "<g class=\"legend\">\n");
	fprintf(fp, "<rect x=\"%g\" y=\"%g\" width=\"%d\" height=\"12\" "
	    "fill=\"#82c99a\"/><text x=\"%g\" y=\"%g\">a thread on its CPU "
	    "(named where it starts; grey: an idle thread)</text>\n",
	    x, y - 9, SV_BAR_W, x + 18, y + 1);
	x += 400;
	fprintf(fp, "<rect x=\"%g\" y=\"%g\" width=\"18\" height=\"12\" "
	    "fill=\"#f39c12\"/><text x=\"%g\" y=\"%g\">stack_capture_intr(): "
	    "the IPI_TRACE handler</text>\n", x, y - 9, x + 24, y + 1);
	x += 290;
	fprintf(fp, "<rect x=\"%g\" y=\"%g\" width=\"%d\" height=\"12\" "
	    "fill=\"#5dade2\"/><text x=\"%g\" y=\"%g\">stack_save_td(): a "
	    "capture of a thread (violet: a snapshot)</text>\n", x, y - 9,
	    SV_BAR_W, x + 18, y + 1);
	x = SV_MARGIN;
	y += SV_ROW_H + 4;
	fprintf(fp, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" "
	    "stroke=\"%s\" stroke-width=\"1.5\" marker-end=\"url(#ah)\"/>"
	    "<text x=\"%g\" y=\"%g\">IPI_TRACE, from ipi_cpu() to its "
	    "handler (dashed: not taken in the trace)</text>\n", x, y - 4,
	    x + 30, y - 4, sc_svg_kinds[SV_K_IPI].k_color, x + 38, y);
	x += 38 + 72 * SV_CHAR_W;
	for (i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
		if (marks[i] < 0) {
			x = SV_MARGIN;
			y += SV_ROW_H + 4;
			continue;
		}
		fprintf(fp, "<g class=\"%s\">", sc_svg_kinds[marks[i]].k_class);
		sc_svg_mark(fp, marks[i], x + 6, y - 4);
		fprintf(fp, "<text x=\"%g\" y=\"%g\" fill=\"%s\">%s</text>"
		    "</g>\n", x + 18, y, sc_svg_kinds[marks[i]].k_color,
		    sc_svg_kinds[marks[i]].k_legend);
		x += 36 + strlen(sc_svg_kinds[marks[i]].k_legend) * SV_CHAR_W;
	}
	fprintf(fp, "</g>\n");
}

/* The lanes: their columns, headers and lifelines. */
static void
sc_svg_lanes(FILE *fp, const struct sc_svg *sv, const struct sc_svg_geo *g)
{
	char name[24];
	double x, bottom = g->g_row_y[sv->sv_nrows];
	int l;

	for (l = 0; l < g->g_nlanes; l++) {
		x = sc_svg_lane_x(g, l);
		sc_svg_lane_name(sv, l, name, sizeof(name));
		fprintf(fp, "<g class=\"lane\" data-lane=\"%s\">"
		    "<rect x=\"%g\" y=\"%g\" width=\"%d\" height=\"%g\" "
		    "fill=\"%s\"/><line x1=\"%g\" y1=\"%g\" x2=\"%g\" "
		    "y2=\"%g\" stroke=\"#bbb\"/><text x=\"%g\" y=\"%g\" "
		    "font-weight=\"bold\">%s</text>", name, x, g->g_head_y - 16,
		    SV_LANE_W - 4, bottom - g->g_head_y + 16, l % 2 == 0 ?
		    "#f4f6f7" : "#fbfcfc", x + SV_MARK_X, g->g_head_y + 6,
		    x + SV_MARK_X, bottom, x + 6, g->g_head_y, name);
		if (l >= sv->sv_ncpu)
			fprintf(fp, "<text x=\"%g\" y=\"%g\" font-size=\"9\" "
			    "fill=\"#555\">(a plain pthread)</text>", x + 6 +
			    strlen(name) * 7.5, g->g_head_y);
		fprintf(fp, "</g>\n");
	}
}

/* The bars, and their labels where they start (in their own lane's row,
 * or in the start row above the first: no other label is there). */
static void
sc_svg_bars(FILE *fp, const struct sc_svg *sv, const struct sc_svg_geo *g)
{
	static const char *const cls[] = { [SV_SLICE] = "slice",
	    [SV_HANDLER] = "handler", [SV_CAPTURE] = "capture",
	    [SV_SNAPSHOT] = "snapshot" };
	const struct sc_svg_span *sp;
	char name[64], td[40];
	double x, y0, y1, w;
	size_t i;

	/* A snapshot's bar under the captures it makes. */
	for (i = 0; sv->sv_nspans > 0 && i < 2 * sv->sv_nspans; i++) {
		sp = &sv->sv_spans[i % sv->sv_nspans];
		if ((sp->sp_kind == SV_SNAPSHOT) != (i < sv->sv_nspans))
			continue;
		x = sc_svg_lane_x(g, sp->sp_lane) + SV_BAR_X;
		y0 = sc_svg_span_y0(g, sp);
		y1 = g->g_row_y[sp->sp_row1];
		w = SV_BAR_W;
		if (sp->sp_kind == SV_HANDLER) {
			x -= 3;
			w += 6;
			y0 -= 5;
			y1 += 5;
		}
		fprintf(fp, "<g class=\"%s\"", cls[sp->sp_kind]);
		if (sp->sp_tid != 0)
			fprintf(fp, " data-td=\"%d\"", sp->sp_tid);
		fprintf(fp, "><rect x=\"%g\" y=\"%g\" width=\"%g\" "
		    "height=\"%g\" rx=\"3\" fill=\"%s\"/>", x, y0, w, y1 - y0,
		    sp->sp_kind == SV_SLICE ?
		    sc_svg_slice_color(sv, sp->sp_tid) :
		    sp->sp_kind == SV_HANDLER ? "#f39c12" :
		    sp->sp_kind == SV_CAPTURE ? "#5dade2" : "#bb8fce");
		if (sp->sp_kind != SV_HANDLER) {
			sc_svg_tdname(sv, sp->sp_tid, td, sizeof(td));
			snprintf(name, sizeof(name), sp->sp_kind == SV_CAPTURE ?
			    "of %s" : sp->sp_kind == SV_SNAPSHOT ?
			    "snapshot" : "%s", td);
			sc_svg_cut(name, (size_t)((SV_LANE_W - SV_TEXT_X - 6) /
			    SV_CHAR_W));
			fprintf(fp, "<text x=\"%g\" y=\"%g\">",
			    sc_svg_lane_x(g, sp->sp_lane) + SV_TEXT_X,
			    (sp->sp_top ? g->g_top_y :
			    g->g_row_y[sp->sp_row0]) + 4);
			sc_svg_esc(fp, name);
			fprintf(fp, "</text>");
		}
		fprintf(fp, "</g>\n");
	}
}

/* Each row: its time, a guide from its mark to its label, the mark (its
 * tooltip the narrated line), the label; a band before a long gap. */
static void
sc_svg_rows(FILE *fp, const struct sc_svg *sv, const struct sc_svg_geo *g)
{
	const struct sc_trace_record *r;
	char label[SV_LABEL_BUF], line[256];
	double x, y;
	size_t i;
	int kind;

	for (i = 0; i < sv->sv_nrows; i++) {
		r = &sv->sv_recs[sv->sv_rowrec[i]];
		x = sc_svg_lane_x(g, sv->sv_lane[sv->sv_rowrec[i]]) + SV_MARK_X;
		y = g->g_row_y[i];
		if (i > 0 && g->g_row_y[i] - g->g_row_y[i - 1] > SV_ROW_H)
			fprintf(fp, "<g class=\"gap\"><rect x=\"%d\" y=\"%g\" "
			    "width=\"%g\" height=\"%d\" fill=\"#eaecee\"/>"
			    "<text x=\"%g\" y=\"%g\" font-style=\"italic\" "
			    "fill=\"#555\">%.3f ms later</text></g>\n",
			    SV_MARGIN, y - SV_ROW_H / 2 - SV_GAP_H,
			    g->g_width - 2 * SV_MARGIN, SV_GAP_H,
			    g->g_label_x, y - SV_ROW_H / 2 - 5,
			    (double)(r->ts_ns -
			    sv->sv_recs[sv->sv_rowrec[i - 1]].ts_ns) / 1e6);
		kind = sc_svg_row_label(sv, i, label, sizeof(label));
		sc__trace_narrate(r, line, sizeof(line));
		fprintf(fp, "<g class=\"row %s\" data-event=\"%s\">"
		    "<text x=\"%d\" y=\"%g\" text-anchor=\"end\" "
		    "fill=\"#555\">%.3f</text><line x1=\"%g\" y1=\"%g\" "
		    "x2=\"%g\" y2=\"%g\" stroke=\"#d0d3d4\" "
		    "stroke-dasharray=\"1 3\"/><g><title>",
		    sc_svg_kinds[kind].k_class,
		    sc_trace_event_name(r->event), SV_MARGIN + SV_TIME_W - 8,
		    y + 4, (double)(r->ts_ns - sv->sv_base) / 1000.0, x + 10, y,
		    g->g_label_x - 4, y);
		sc_svg_esc(fp, line);
		fprintf(fp, "</title>");
		sc_svg_mark(fp, kind, x, y);
		fprintf(fp, "</g><text class=\"label\" x=\"%g\" y=\"%g\" "
		    "fill=\"%s\"%s>", g->g_label_x, y + 4,
		    sc_svg_kinds[kind].k_color, kind == SV_K_RETRY ||
		    kind == SV_K_ERROR || kind == SV_K_NOCPU ?
		    " font-weight=\"bold\"" : "");
		sc_svg_esc(fp, label);
		fprintf(fp, "</text></g>\n");
	}
}

/* The IPIs' arrows, over everything else. */
static void
sc_svg_ipis(FILE *fp, const struct sc_svg *sv, const struct sc_svg_geo *g)
{
	const struct sc_svg_arrow *a;
	double x0, y0, x1, y1;
	size_t i;
	int lane;

	for (i = 0; i < sv->sv_narrows; i++) {
		a = &sv->sv_arrows[i];
		x0 = sc_svg_lane_x(g, sv->sv_lane[sv->sv_rowrec[a->ar_from]]) +
		    SV_MARK_X;
		y0 = g->g_row_y[a->ar_from];
		if (a->ar_to >= 0) {
			lane = sv->sv_lane[sv->sv_rowrec[a->ar_to]];
			y1 = g->g_row_y[a->ar_to];
		} else {
			lane = a->ar_cpu >= 0 ? a->ar_cpu : 0;
			y1 = g->g_row_y[sv->sv_nrows];
		}
		x1 = sc_svg_lane_x(g, lane) + SV_MARK_X;
		/* End at the mark's edge, not under it. */
		x1 += x0 < x1 ? -7 : x0 > x1 ? 7 : 0;
		y1 += y0 < y1 ? -3 : 3;
		fprintf(fp, "<g class=\"ipi\" data-ipi=\"%" PRIu64 "\"><title>"
		    "IPI_TRACE [ipi %" PRIu64 "]%s</title><line x1=\"%g\" "
		    "y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"%s\" "
		    "stroke-width=\"1.5\" marker-end=\"url(#ah)\"%s/></g>\n",
		    a->ar_ipi, a->ar_ipi, a->ar_to >= 0 ? "" : ": not taken in "
		    "the trace", x0, y0, x1, y1, sc_svg_kinds[SV_K_IPI].k_color,
		    a->ar_to >= 0 ? "" : " stroke-dasharray=\"5 3\"");
	}
}

void
sc__svg_draw(const struct sc_svg *sv, FILE *fp, double *row_y)
{
	struct sc_svg_geo g;

	memset(&g, 0, sizeof(g));
	g.g_row_y = row_y;
	sc_svg_layout(sv, &g);
	fprintf(fp, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
	    "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
	    "font-family=\"" SV_FONT "\" font-size=\"11\">\n<title>",
	    g.g_width, g.g_height, g.g_width, g.g_height);
	sc_svg_esc(fp, sv->sv_title != NULL ? sv->sv_title : "stackcap trace");
	fprintf(fp, "</title>\n<defs><marker id=\"ah\" viewBox=\"0 0 10 10\" "
	    "refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
	    "orient=\"auto\"><path d=\"M0 0L10 5L0 10z\" fill=\"%s\"/>"
	    "</marker></defs>\n<rect width=\"100%%\" height=\"100%%\" "
	    "fill=\"#fff\"/>\n<text x=\"%d\" y=\"24\" font-size=\"14\" "
	    "font-weight=\"bold\">", sc_svg_kinds[SV_K_IPI].k_color, SV_MARGIN);
	sc_svg_esc(fp, sv->sv_title != NULL ? sv->sv_title : "stackcap trace");
	fprintf(fp, "</text>\n<text x=\"%d\" y=\"42\" fill=\"#555\">%d CPU%s; "
	    "one row per event, in the trace's order (not to scale); time in "
	    "us since the first event, as in the narrated trace; a mark's "
	    "tooltip is its narrated line</text>\n", SV_MARGIN, sv->sv_ncpu,
	    sv->sv_ncpu == 1 ? "" : "s");
	sc_svg_legend(fp, &g);
	fprintf(fp, "<text x=\"%d\" y=\"%g\" text-anchor=\"end\" "
	    "font-weight=\"bold\">time (us)</text>\n",
	    SV_MARGIN + SV_TIME_W - 8, g.g_head_y);
	sc_svg_lanes(fp, sv, &g);
	sc_svg_bars(fp, sv, &g);
	sc_svg_rows(fp, sv, &g);
	sc_svg_ipis(fp, sv, &g);
	fprintf(fp, "</svg>\n");
}
