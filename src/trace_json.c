/*
 * The protocol trace as Chrome trace-event JSON, for Perfetto,
 * chrome://tracing, Chrome DevTools and speedscope.
 *
 * No kernel counterpart (see trace.c).  What each viewer needs shapes the
 * output:
 * - Tracks: a CPU's, and one per plain pthread (by its Linux tid, which
 *   its records carry); each track's first slices are written before any
 *   other and cover the whole trace (sc_js_runs()): DevTools lists only
 *   tracks with slices, in the order of their first ones, and speedscope
 *   lines its profiles up by their first and last slices.
 * - One category, "stackcap", for every event of the protocol, and
 *   "sched" for the slices of no event (threads on CPUs, tracks' spans):
 *   DevTools binds a flow event only to an event of the same cat, pid, tid
 *   and ts.
 * - Duration ("X") slices, since speedscope builds its profiles from them
 *   alone.  A capture is a "stack_save_td" slice on its requester's track,
 *   from CAPTURE_BEGIN to its CAPTURE_DONE (same track, same target); the
 *   requester's wait for each IPI is an "IPI_TRACE wait" slice inside it,
 *   from IPI_SENT to the requester's next step about that target; the
 *   handler is a "stack_capture_intr" slice on its CPU's track, from
 *   IPI_RECEIVED to ANSWER_PUBLISHED (or STALE_IPI, or WALK_DONE when the
 *   publish is not in the ring).  A snapshot is a "sc_machine_snapshot"
 *   slice from SNAPSHOT_BEGIN to SNAPSHOT_DONE, each of its rounds a
 *   "snapshot round" slice up to the next round (or the end), and the
 *   wait for each IPI of a round runs from its IPI_SENT to the round's end:
 *   the waits overlap, and so end together, to nest.  A snapshot's
 *   captures of running threads have no slice of their own (their
 *   CAPTURE_DONE is an instant).  Slices of one track must nest for
 *   Perfetto and speedscope: one that would overlap another without
 *   nesting is not drawn, and its events stay instants.  They must nest
 *   in the reader's doubles too: every time is on one grid of doubles,
 *   so ts + dur is exactly the end's time (sc__json_quantum()).
 * - The flow of an IPI starts on the ts of its wait slice and ends
 *   ("bp":"e") on the ts of its handler slice, same pid/tid.  No other
 *   event may have that ts there, or DevTools may bind the flow to it: the
 *   instant of the event that opens such a slice is written 1 ns late.
 * - After the ring wraps, an event's partner may be gone.  A slice whose
 *   opening event was overwritten is not drawn (its closing event, a
 *   CAPTURE_DONE say, stays an instant: clamping it to the start of the
 *   trace would invent a duration), nor a flow whose other end has no slice.
 * - tids start at 1 (cpuN is tid N + 1, the pthreads' from ncpu + 1):
 *   some Perfetto builds dropped tid 0.
 * Every event is also an instant ("ph":"i", thread scope) with args
 * event, seq, td, arg0, arg1 and its narrated text.  Slices carry few args
 * (td; a capture's result and depth; a wait's target cpu): speedscope
 * names a frame by its name and all its args.
 */
#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_internal.h"
#include "trace_names.h"

#define SC_JS_CAT	"stackcap"

enum sc_js_kind {
	SC_JS_CAPTURE, SC_JS_WAIT, SC_JS_HANDLER, SC_JS_SNAPSHOT, SC_JS_ROUND,
	SC_JS_RUN, SC_JS_SPAN
};

static const char *const sc_js_names[] = {
	[SC_JS_CAPTURE] = "stack_save_td",
	[SC_JS_WAIT] = "IPI_TRACE wait",
	[SC_JS_HANDLER] = "stack_capture_intr",
	[SC_JS_SNAPSHOT] = "sc_machine_snapshot",
	[SC_JS_ROUND] = "snapshot round",
	[SC_JS_RUN] = "td",
	[SC_JS_SPAN] = "span",
};

struct sc_js_slice {
	size_t		sl_open;	/* the record that opens it (RUN, SPAN:
					   none, SC_JS_NOREC) */
	size_t		sl_close;	/* the record that closes it */
	uint64_t	sl_t0, sl_t1;	/* its start and end (ns) */
	int		sl_track;
	int		sl_tid;		/* RUN: the thread that ran */
	uint64_t	sl_flow;	/* the IPI id of its flow, 0: none */
	int		sl_kind;	/* enum sc_js_kind */
	bool		sl_kept;	/* nests in its track */
};

/* What the nesting check sorts. */
struct sc_js_key {
	uint64_t	k_start, k_end;
	int		k_track, k_kind;
	size_t		k_sl;
};

/* What the flow pairing sorts. */
struct sc_js_ipi {
	uint64_t	ip_id;
	size_t		ip_sl;
};

struct sc_js {
	const struct sc_machine *js_m;
	const struct sc_trace_record *js_recs;
	size_t		js_n;
	uint64_t	js_base;	/* earliest ts: the JSON's 0 */
	uint64_t	js_end;		/* latest ts */
	double		js_q;		/* grid of times: sc__json_quantum() */
	int		*js_track;	/* [js_n] a record's track */
	int		js_ntracks;	/* the CPUs', then the requesters' */
	int		*js_host;	/* [js_ntracks - ncpu] a requester
					   track's Linux tid */
	struct sc_js_slice *js_sl;	/* at most one per opening record */
	size_t		js_nsl;
	long		*js_opens;	/* [js_n] slice a record opens, or -1 */
	long		*js_link;	/* [js_n] next open CAPTURE_BEGIN */
	struct sc_trace_names js_names;	/* the threads' names, by tid */
};

#define SC_JS_NOREC	((size_t)-1)

/* The track of an event: its CPU's, or its plain pthread's. */
static int
sc_js_track(const struct sc_js *js, const struct sc_trace_record *r)
{
	return (js->js_track[r - js->js_recs]);
}

/*
 * Give each record its track: a CPU's event is on the CPU's (0..ncpu-1),
 * a plain pthread's on its own, one a Linux tid, in the order of their
 * first events.  js_host has room for js_n.
 */
static void
sc_js_tracks(struct sc_js *js)
{
	const struct sc_trace_record *r;
	int ncpu = js->js_m->m_ncpu, nreq = 0;
	size_t i;

	js->js_end = js->js_base;
	for (i = 0; i < js->js_n; i++) {
		r = &js->js_recs[i];
		if (r->ts_ns > js->js_end)
			js->js_end = r->ts_ns;
		if (r->cpu >= 0 && r->cpu < ncpu)
			js->js_track[i] = r->cpu;
		else
			js->js_track[i] = ncpu + sc__trace_requester(
			    js->js_host, &nreq, (int)js->js_n, r->host_tid);
	}
	js->js_ntracks = ncpu + nreq;
}

/* The requester's first step once the wait for an answer is over. */
static bool
sc_js_wait_over(int event)
{
	return (event == SC_TRACE_ANSWER_SEEN ||
	    event == SC_TRACE_LOCK_TAKEN || event == SC_TRACE_RETRY ||
	    event == SC_TRACE_TIMEOUT || event == SC_TRACE_CAPTURE_DONE);
}

static void
sc_js_add(struct sc_js *js, size_t open, size_t close, int kind)
{
	struct sc_js_slice *sl = &js->js_sl[js->js_nsl];

	sl->sl_open = open;
	sl->sl_close = close;
	sl->sl_t0 = js->js_recs[open].ts_ns;
	/* A closing event a hair earlier than the opening one (another
	 * pthread's clock read) closes it at once. */
	sl->sl_t1 = js->js_recs[close].ts_ns > sl->sl_t0 ?
	    js->js_recs[close].ts_ns : sl->sl_t0;
	sl->sl_track = sc_js_track(js, &js->js_recs[open]);
	sl->sl_tid = 0;
	sl->sl_kind = kind;
	sl->sl_flow = 0;
	sl->sl_kept = false;
	js->js_opens[open] = (long)js->js_nsl++;
}

/* A slice of no record's: a thread's run on a CPU, or a track's span. */
static void
sc_js_add_span(struct sc_js *js, int track, int kind, int tid, uint64_t t0,
    uint64_t t1)
{
	struct sc_js_slice *sl = &js->js_sl[js->js_nsl++];

	memset(sl, 0, sizeof(*sl));
	sl->sl_open = sl->sl_close = SC_JS_NOREC;
	sl->sl_t0 = t0;
	sl->sl_t1 = t1 > t0 ? t1 : t0;
	sl->sl_track = track;
	sl->sl_tid = tid;
	sl->sl_kind = kind;
}

/*
 * Every track's slices of no record, added before any other so that the
 * viewers list the tracks in order (they take the order of the first
 * events): on a CPU, the threads that ran, from SWITCH (who ran before
 * the CPU's first switch is that switch's old thread, or the thread its
 * first IPI interrupted; a CPU with neither has a span of the trace); on
 * a requester's track, a span of the trace.  So every track shows, and
 * every track starts at the trace's start and ends at its end (speedscope
 * lines its profiles up by their first and last events).
 */
static int
sc_js_runs(struct sc_js *js)
{
	const struct sc_trace_record *r;
	int ncpu = js->js_m->m_ncpu, c, t, *cur;
	uint64_t *t0;
	size_t i;

	cur = calloc((size_t)ncpu + 1, sizeof(*cur));
	t0 = calloc((size_t)ncpu + 1, sizeof(*t0));
	if (cur == NULL || t0 == NULL) {
		free(cur);
		free(t0);
		return (ENOMEM);
	}
	for (c = 0; c < ncpu; c++)
		t0[c] = js->js_base;
	for (i = 0; i < js->js_n; i++) {
		r = &js->js_recs[i];
		if ((c = js->js_track[i]) >= ncpu)
			continue;
		if (r->event != SC_TRACE_SWITCH &&
		    r->event != SC_TRACE_IPI_RECEIVED)
			continue;
		if (cur[c] == 0)
			cur[c] = r->tid;	/* it ran since the start */
		if (r->event != SC_TRACE_SWITCH)
			continue;
		sc_js_add_span(js, c, SC_JS_RUN, cur[c], t0[c], r->ts_ns);
		cur[c] = (int)r->arg0;
		t0[c] = r->ts_ns;
	}
	for (c = 0; c < ncpu; c++)
		if (cur[c] != 0)
			sc_js_add_span(js, c, SC_JS_RUN, cur[c], t0[c],
			    js->js_end);
		else
			sc_js_add_span(js, c, SC_JS_SPAN, 0, js->js_base,
			    js->js_end);
	for (t = ncpu; t < js->js_ntracks; t++)
		sc_js_add_span(js, t, SC_JS_SPAN, 0, js->js_base, js->js_end);
	free(cur);
	free(t0);
	return (0);
}

/*
 * Unlink from the list at *head (linked through js_link) the latest record
 * whose tid is tid, and return it (-1: none).
 */
static long
sc_js_take(struct sc_js *js, long *head, int tid)
{
	long b, prev;

	for (prev = -1, b = *head; b >= 0; prev = b, b = js->js_link[b])
		if (js->js_recs[b].tid == tid)
			break;
	if (b < 0)
		return (-1);
	if (prev < 0)
		*head = js->js_link[b];
	else
		js->js_link[prev] = js->js_link[b];
	return (b);
}

/* The per-track state of the pairing (sc_js_pair()). */
struct sc_js_open {
	long	o_handler;	/* IPI_RECEIVED of the handler in progress */
	long	o_walk;		/* ... its WALK_DONE */
	long	o_waits;	/* list of the IPI_SENTs of the waits in
				   progress, one per target (simulated
				   requesters share their CPU's track) */
	long	o_captures;	/* list of open CAPTURE_BEGINs */
	long	o_snapshot;	/* SNAPSHOT_BEGIN of the snapshot in progress */
	long	o_round;	/* SNAPSHOT_ROUND of its round in progress */
	long	o_rwaits;	/* list of the round's IPI_SENTs */
};

/*
 * A snapshot round ends at record i (the next round, or the snapshot's
 * end): so do the waits of its IPIs, which all end together and so nest,
 * one inside the other, in the round's slice.
 */
static void
sc_js_round_end(struct sc_js *js, struct sc_js_open *o, size_t i)
{
	long w;

	if (o->o_round >= 0)
		sc_js_add(js, (size_t)o->o_round, i, SC_JS_ROUND);
	for (w = o->o_rwaits; w >= 0; w = js->js_link[w])
		sc_js_add(js, (size_t)w, i, SC_JS_WAIT);
	o->o_round = o->o_rwaits = -1;
}

/*
 * Pair the events that open and close each slice, in one pass.  Per track:
 * the handler in progress (its IPI_RECEIVED, its WALK_DONE), the waits in
 * progress (their IPI_SENTs), the open CAPTURE_BEGINs, and a snapshot
 * with its round.  A handler's events follow each other on its CPU
 * (nothing else runs there meanwhile); a requester's steps about one
 * target follow each other on its track, with others' events in between.
 * A snapshot's waits overlap: they are drawn from their IPI_SENT to the
 * end of their round.
 */
static void
sc_js_pair(struct sc_js *js, struct sc_js_open *open)
{
	const struct sc_trace_record *recs = js->js_recs, *r;
	struct sc_js_open *o;
	long b, h, w;
	size_t i;
	int t, ntracks = js->js_ntracks;

	for (t = 0; t < ntracks; t++) {
		o = &open[t];
		o->o_handler = o->o_walk = o->o_waits = o->o_captures = -1;
		o->o_snapshot = o->o_round = o->o_rwaits = -1;
	}
	for (i = 0; i < js->js_n; i++) {
		r = &recs[i];
		o = &open[sc_js_track(js, r)];

		if ((h = o->o_handler) >= 0) {
			if (r->tid == recs[h].tid &&
			    r->event == SC_TRACE_WALK_DONE)
				o->o_walk = (long)i;
			else if (r->tid == recs[h].tid &&
			    (r->event == SC_TRACE_ANSWER_PUBLISHED ||
			    r->event == SC_TRACE_STALE_IPI)) {
				sc_js_add(js, (size_t)h, i, SC_JS_HANDLER);
				o->o_handler = -1;
			} else {
				/* The publish is not in the ring. */
				if (o->o_walk >= 0)
					sc_js_add(js, (size_t)h,
					    (size_t)o->o_walk, SC_JS_HANDLER);
				o->o_handler = -1;
			}
		}
		if (r->event == SC_TRACE_IPI_RECEIVED) {
			o->o_handler = (long)i;
			o->o_walk = -1;
		}

		if (r->event == SC_TRACE_SWITCH) {
			/* The requester left: what it had open stays open
			 * no more on this track. */
			o->o_waits = o->o_snapshot = o->o_round = -1;
			o->o_rwaits = -1;
		}
		if (sc__trace_capture_step(r->event) &&
		    (w = sc_js_take(js, &o->o_waits, r->tid)) >= 0 &&
		    sc_js_wait_over(r->event))
			sc_js_add(js, (size_t)w, i, SC_JS_WAIT);

		switch (r->event) {
		case SC_TRACE_IPI_SENT:
			if (o->o_round >= 0) {
				js->js_link[i] = o->o_rwaits;
				o->o_rwaits = (long)i;
			} else {
				js->js_link[i] = o->o_waits;
				o->o_waits = (long)i;
			}
			break;
		case SC_TRACE_CAPTURE_BEGIN:
			js->js_link[i] = o->o_captures;
			o->o_captures = (long)i;
			break;
		case SC_TRACE_CAPTURE_DONE:
			/* The latest open capture of this target here (none:
			 * its BEGIN was overwritten, or a snapshot's). */
			if ((b = sc_js_take(js, &o->o_captures, r->tid)) >= 0)
				sc_js_add(js, (size_t)b, i, SC_JS_CAPTURE);
			break;
		case SC_TRACE_SNAPSHOT_BEGIN:
			o->o_snapshot = (long)i;
			break;
		case SC_TRACE_SNAPSHOT_ROUND:
			sc_js_round_end(js, o, i);
			o->o_round = (long)i;
			break;
		case SC_TRACE_SNAPSHOT_DONE:
			sc_js_round_end(js, o, i);
			if (o->o_snapshot >= 0)
				sc_js_add(js, (size_t)o->o_snapshot, i,
				    SC_JS_SNAPSHOT);
			o->o_snapshot = -1;
			break;
		}
	}
	for (t = 0; t < ntracks; t++)
		if (open[t].o_handler >= 0 && open[t].o_walk >= 0)
			sc_js_add(js, (size_t)open[t].o_handler,
			    (size_t)open[t].o_walk, SC_JS_HANDLER);
}

/* By track, then start: the slices of no record, in the order written. */
static int
sc_js_span_cmp(const void *a, const void *b)
{
	const struct sc_js_slice *x = a, *y = b;

	if (x->sl_track != y->sl_track)
		return (x->sl_track < y->sl_track ? -1 : 1);
	if (x->sl_t0 != y->sl_t0)
		return (x->sl_t0 < y->sl_t0 ? -1 : 1);
	return (x->sl_t1 < y->sl_t1 ? -1 : x->sl_t1 > y->sl_t1);
}

/* By track, then start; the longer first, so a parent precedes its child. */
static int
sc_js_key_cmp(const void *a, const void *b)
{
	const struct sc_js_key *x = a, *y = b;

	if (x->k_track != y->k_track)
		return (x->k_track < y->k_track ? -1 : 1);
	if (x->k_start != y->k_start)
		return (x->k_start < y->k_start ? -1 : 1);
	if (x->k_end != y->k_end)
		return (x->k_end > y->k_end ? -1 : 1);
	if (x->k_kind != y->k_kind)
		return (x->k_kind < y->k_kind ? -1 : 1);
	return (x->k_sl < y->k_sl ? -1 : x->k_sl > y->k_sl);
}

/* Keep the slices that nest in their track, the earlier one of a clash. */
static int
sc_js_nest(struct sc_js *js)
{
	struct sc_js_key *keys, *k;
	size_t i, depth = 0, *stack;
	int track = -1;

	keys = calloc(js->js_nsl + 1, sizeof(*keys));
	stack = calloc(js->js_nsl + 1, sizeof(*stack));
	if (keys == NULL || stack == NULL) {
		free(keys);
		free(stack);
		return (ENOMEM);
	}
	for (i = 0; i < js->js_nsl; i++) {
		keys[i].k_start = js->js_sl[i].sl_t0;
		keys[i].k_end = js->js_sl[i].sl_t1;
		keys[i].k_track = js->js_sl[i].sl_track;
		keys[i].k_kind = js->js_sl[i].sl_kind;
		keys[i].k_sl = i;
	}
	qsort(keys, js->js_nsl, sizeof(*keys), sc_js_key_cmp);
	for (i = 0; i < js->js_nsl; i++) {
		k = &keys[i];
		if (k->k_track != track) {
			track = k->k_track;
			depth = 0;
		}
		while (depth > 0 && keys[stack[depth - 1]].k_end <= k->k_start)
			depth--;
		if (depth > 0 && k->k_end > keys[stack[depth - 1]].k_end)
			continue;
		js->js_sl[k->k_sl].sl_kept = true;
		stack[depth++] = i;
	}
	free(keys);
	free(stack);
	return (0);
}

static int
sc_js_ipi_cmp(const void *a, const void *b)
{
	const struct sc_js_ipi *x = a, *y = b;

	if (x->ip_id != y->ip_id)
		return (x->ip_id < y->ip_id ? -1 : 1);
	return (x->ip_sl < y->ip_sl ? -1 : x->ip_sl > y->ip_sl);
}

/*
 * A flow for each IPI whose wait and handler slices are both drawn, the
 * handler no earlier than the send: after a wrap, or when a handler reads
 * the id of an IPI sent while it ran, one end has no partner.
 */
static int
sc_js_flows(struct sc_js *js)
{
	struct sc_js_ipi *w, *h;
	struct sc_js_slice *sl, *ws, *hs;
	size_t i, j, nw = 0, nh = 0;

	w = calloc(js->js_nsl + 1, sizeof(*w));
	h = calloc(js->js_nsl + 1, sizeof(*h));
	if (w == NULL || h == NULL) {
		free(w);
		free(h);
		return (ENOMEM);
	}
	for (i = 0; i < js->js_nsl; i++) {
		sl = &js->js_sl[i];
		if (!sl->sl_kept)
			continue;
		if (sl->sl_kind == SC_JS_WAIT)
			w[nw++] = (struct sc_js_ipi){
			    js->js_recs[sl->sl_open].arg1, i };
		else if (sl->sl_kind == SC_JS_HANDLER)
			h[nh++] = (struct sc_js_ipi){
			    js->js_recs[sl->sl_open].arg1, i };
	}
	qsort(w, nw, sizeof(*w), sc_js_ipi_cmp);
	qsort(h, nh, sizeof(*h), sc_js_ipi_cmp);
	for (i = j = 0; i < nw && j < nh;) {
		if (w[i].ip_id < h[j].ip_id)
			i++;
		else if (w[i].ip_id > h[j].ip_id)
			j++;
		else {
			ws = &js->js_sl[w[i++].ip_sl];
			hs = &js->js_sl[h[j++].ip_sl];
			if (ws->sl_flow == 0 && hs->sl_flow == 0 &&
			    hs->sl_t0 >= ws->sl_t0)
				ws->sl_flow = hs->sl_flow =
				    js->js_recs[ws->sl_open].arg1;
		}
	}
	free(w);
	free(h);
	return (0);
}

/* ns since the trace's start, as microseconds with 3 decimals: exact, so a
 * flow's ts is the same number as its slice's. */
static void
sc_js_us(FILE *fp, uint64_t ns)
{
	fprintf(fp, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

/* The gap from x > 0 to the next double up. */
static double
sc_js_ulp(double x)
{
	double up;
	uint64_t bits;

	memcpy(&bits, &x, sizeof(bits));
	bits++;
	memcpy(&up, &bits, sizeof(up));
	return (up - x);
}

/* The C locale, made once: digits whatever the program's LC_NUMERIC. */
static pthread_once_t sc_js_c_once = PTHREAD_ONCE_INIT;
static locale_t sc_js_c_locale;

static void
sc_js_c_init(void)
{
	sc_js_c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/*
 * x, the time of ns: as sc_js_us() writes ns when x is its double, else
 * with the fewest digits that read back as x (%.17g at most), in the C
 * locale.
 */
static void
sc_js_num(FILE *fp, double x, uint64_t ns)
{
	char buf[32];
	locale_t prev;
	int prec;

	pthread_once(&sc_js_c_once, sc_js_c_init);
	if (x == (double)ns / 1000 || sc_js_c_locale == (locale_t)0) {
		sc_js_us(fp, ns);
		return;
	}
	prev = uselocale(sc_js_c_locale);
	for (prec = 15;; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, x);
		if (prec == 17 || strtod(buf, NULL) == x)
			break;
	}
	uselocale(prev);
	fputs(buf, fp);
}

/*
 * The grid of the JSON's times: ulp of the latest time, span_ns after
 * the JSON's 0 (a power of two, below a ns while the trace is shorter
 * than 52 days).
 *
 * Why a grid: a reader adds a slice's ts and dur in doubles.  14249.853 +
 * 403.612 is 14653.464999999998 and 14251.015 + 402.450 is 14653.465, so
 * two slices written with three decimals and ending on one ns could end
 * in the wrong order, the inner one after the outer.  speedscope sorts
 * the ends by that sum and drops an end that is not on its stack's top:
 * the rest of the track's profile was lost (its length fell short of the
 * trace's).  On the grid every time is a multiple of q below 2^53 q, so
 * t1 - t0 is exact and ts + dur is t1's own double, for every slice that
 * ends there and every one that starts there.
 */
double
sc__json_quantum(uint64_t span_ns)
{
	return (sc_js_ulp((double)(span_ns > 0 ? span_ns : 1) / 1000));
}

/* The time ns after the JSON's 0 on the grid q: the nearest point. */
static double
sc_js_t(double q, uint64_t ns)
{
	/* ns / 1000 / q < 2^53, and a division by a power of two is exact. */
	return ((double)(uint64_t)((double)ns / 1000 / q + 0.5) * q);
}

/* The time ns after the JSON's 0, written on the grid q. */
static void
sc_js_time(FILE *fp, double q, uint64_t ns)
{
	sc_js_num(fp, sc_js_t(q, ns), ns);
}

/*
 * "ts":…,"dur":… of a slice from t0 to t1 (ns after the JSON's 0) on the
 * grid q: ts + dur, added in doubles, is exactly t1's time.  Most are
 * written with three decimals; the others with the digits of the grid.
 */
void
sc__json_ts_dur(FILE *fp, double q, uint64_t t0, uint64_t t1)
{
	double a = sc_js_t(q, t0);

	SC_KASSERT(t0 <= t1, , "a slice from %" PRIu64 " ns to %" PRIu64,
	    t0, t1);
	fputs("\"ts\":", fp);
	sc_js_num(fp, a, t0);
	fputs(",\"dur\":", fp);
	sc_js_num(fp, sc_js_t(q, t1) - a, t1 - t0);
}

/* A JSON string; host_print.c's too. */
void
sc__json_string(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(fp, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(fp, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, fp);
	}
	fputc('"', fp);
}

/* An event as an instant, late by `nudge` ns (see sc_js_write()). */
static void
sc_js_instant(FILE *fp, const struct sc_js *js,
    const struct sc_trace_record *r, uint64_t nudge)
{
	char line[256];

	sc__trace_narrate(r, line, sizeof(line));
	fprintf(fp, ",\n{\"name\":\"%s\",\"cat\":\"" SC_JS_CAT
	    "\",\"ph\":\"i\",\"s\":\"t\",\"ts\":",
	    sc_trace_event_name(r->event));
	sc_js_time(fp, js->js_q, r->ts_ns - js->js_base + nudge);
	fprintf(fp, ",\"pid\":1,\"tid\":%d,\"args\":{\"event\":\"%s\",\"seq\":%"
	    PRIu64 ",\"td\":%d,\"arg0\":%" PRIu64 ",\"arg1\":%" PRIu64
	    ",\"text\":", sc_js_track(js, r) + 1, sc_trace_event_name(r->event),
	    r->seq, r->tid, r->arg0, r->arg1);
	sc__json_string(fp, line);
	fprintf(fp, "}}");
}

/*
 * The slice, then its end of a flow (same ts, pid, tid and cat).  Its args
 * are few: speedscope names a frame by its name and all its args; the
 * events' own args and text are on their instants.
 */
static void
sc_js_slice(FILE *fp, const struct sc_js *js, const struct sc_js_slice *sl)
{
	const struct sc_trace_record *open = &js->js_recs[sl->sl_open];
	const struct sc_trace_record *close = &js->js_recs[sl->sl_close];
	uint64_t start = sl->sl_t0 - js->js_base, end = sl->sl_t1 - js->js_base;
	int tid = sl->sl_track + 1;

	fprintf(fp, ",\n{\"name\":\"%s\",\"cat\":\"" SC_JS_CAT
	    "\",\"ph\":\"X\",", sc_js_names[sl->sl_kind]);
	sc__json_ts_dur(fp, js->js_q, start, end);
	fprintf(fp, ",\"pid\":1,\"tid\":%d,\"args\":{\"td\":%d", tid,
	    open->tid);
	if (sl->sl_kind == SC_JS_CAPTURE)
		fprintf(fp, ",\"result\":\"%s\",\"depth\":%" PRIu64,
		    sc_errname((int)close->arg0), close->arg1);
	else if (sl->sl_kind == SC_JS_WAIT)
		fprintf(fp, ",\"cpu\":%" PRIu64, open->arg0);
	fprintf(fp, "}}");
	if (sl->sl_flow == 0)
		return;
	fprintf(fp, ",\n{\"name\":\"IPI_TRACE\",\"cat\":\"" SC_JS_CAT "\","
	    "\"ph\":\"%s\",%s\"id\":%" PRIu64 ",\"ts\":",
	    sl->sl_kind == SC_JS_WAIT ? "s" : "f",
	    sl->sl_kind == SC_JS_WAIT ? "" : "\"bp\":\"e\",", sl->sl_flow);
	sc_js_time(fp, js->js_q, start);	/* the slice's ts */
	fprintf(fp, ",\"pid\":1,\"tid\":%d}", tid);
}

/* A track's name: "cpuN", or "pthread TID" (its Linux tid). */
static void
sc_js_track_name(FILE *fp, const struct sc_js *js, int t)
{
	int ncpu = js->js_m->m_ncpu;

	if (t < ncpu)
		fprintf(fp, "cpu%d", t);
	else
		fprintf(fp, "pthread %d", js->js_host[t - ncpu]);
}

/*
 * A slice of no record's, in the category "sched": DevTools binds no flow
 * to it (a flow binds only to an event of its own category), and its
 * args are none but the thread's.
 */
static void
sc_js_span(FILE *fp, const struct sc_js *js, const struct sc_js_slice *sl)
{
	const struct sc_trace_name *nm = NULL;
	char name[64];

	if (sl->sl_kind == SC_JS_RUN &&
	    (nm = sc__trace_name(&js->js_names, sl->sl_tid)) != NULL &&
	    nm->nm_name[0] == '\0')
		nm = NULL;
	fprintf(fp, ",\n{\"name\":");
	if (sl->sl_kind == SC_JS_RUN) {
		if (nm != NULL)
			snprintf(name, sizeof(name), "%s (td %d)",
			    nm->nm_name, sl->sl_tid);
		else
			snprintf(name, sizeof(name), "td %d", sl->sl_tid);
		sc__json_string(fp, name);
	} else {
		fputc('"', fp);
		sc_js_track_name(fp, js, sl->sl_track);
		fputc('"', fp);
	}
	fprintf(fp, ",\"cat\":\"sched\",\"ph\":\"X\",");
	sc__json_ts_dur(fp, js->js_q, sl->sl_t0 - js->js_base,
	    sl->sl_t1 - js->js_base);
	fprintf(fp, ",\"pid\":1,\"tid\":%d,\"args\":{", sl->sl_track + 1);
	if (sl->sl_kind == SC_JS_RUN)
		fprintf(fp, "\"td\":%d", sl->sl_tid);
	if (nm != NULL) {
		fputs(",\"tdname\":", fp);
		sc__json_string(fp, nm->nm_name);
	}
	fprintf(fp, "}}");
}

static void
sc_js_write(FILE *fp, const struct sc_js *js)
{
	const struct sc_js_slice *sl;
	size_t i;
	int t;

	fprintf(fp, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
	fprintf(fp, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,"
	    "\"tid\":1,\"args\":{\"name\":\"stackcap machine\"}}");
	for (t = 0; t < js->js_ntracks; t++) {
		fprintf(fp, ",\n{\"name\":\"thread_name\",\"ph\":\"M\","
		    "\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"", t + 1);
		sc_js_track_name(fp, js, t);
		fprintf(fp, "\"}}");
		fprintf(fp, ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\","
		    "\"pid\":1,\"tid\":%d,\"args\":{\"sort_index\":%d}}", t + 1,
		    t);
	}
	/* The slices of no record first, by track (sc_js_runs()). */
	for (i = 0; i < js->js_nsl; i++)
		if (js->js_sl[i].sl_open == SC_JS_NOREC && js->js_sl[i].sl_kept)
			sc_js_span(fp, js, &js->js_sl[i]);
	/*
	 * Every event is an instant.  That of an event that opens a slice
	 * with a flow is written 1 ns late: DevTools binds a flow to the last
	 * event (in its order, the shortest) with the flow's cat, pid, tid and
	 * ts, and that must be the slice.
	 */
	for (i = 0; i < js->js_n; i++) {
		sl = js->js_opens[i] >= 0 ? &js->js_sl[js->js_opens[i]] : NULL;
		if (sl != NULL && !sl->sl_kept)
			sl = NULL;
		if (sl != NULL)
			sc_js_slice(fp, js, sl);
		sc_js_instant(fp, js, &js->js_recs[i],
		    sl != NULL && sl->sl_flow != 0 ? 1 : 0);
	}
	fprintf(fp, "\n]}\n");
}

int
sc_trace_write_json(struct sc_machine *m, FILE *fp)
{
	struct sc_trace_record *recs;
	struct sc_js js;
	struct sc_js_open *state = NULL;
	size_t i, n = 0;
	int error = ENOMEM;

	if ((recs = sc__trace_take(m, &n)) == NULL)
		return (m->m_trace == NULL ? ENOENT : ENOMEM);
	memset(&js, 0, sizeof(js));
	js.js_m = m;
	js.js_recs = recs;
	js.js_n = n;
	js.js_base = sc__trace_base(recs, n);
	js.js_track = calloc(n + 1, sizeof(*js.js_track));
	js.js_host = calloc(n + 1, sizeof(*js.js_host));
	if (js.js_track == NULL || js.js_host == NULL)
		goto out;
	sc_js_tracks(&js);
	/* The latest time written: an instant 1 ns late, at most. */
	js.js_q = sc__json_quantum(js.js_end - js.js_base + 1);
	/* A slice per opening record, a run per SWITCH and per CPU, a span
	 * per track. */
	js.js_sl = calloc(2 * n + 2 * (size_t)js.js_ntracks + 1,
	    sizeof(*js.js_sl));
	js.js_opens = calloc(n + 1, sizeof(*js.js_opens));
	js.js_link = calloc(n + 1, sizeof(*js.js_link));
	state = calloc((size_t)js.js_ntracks + 1, sizeof(*state));
	if (js.js_sl == NULL || js.js_opens == NULL || js.js_link == NULL ||
	    state == NULL)
		goto out;
	if (sc__trace_names_get(m, &js.js_names) != 0)
		goto out;
	for (i = 0; i < n; i++)
		js.js_opens[i] = -1;
	if ((error = sc_js_runs(&js)) != 0)
		goto out;
	qsort(js.js_sl, js.js_nsl, sizeof(*js.js_sl), sc_js_span_cmp);
	sc_js_pair(&js, state);
	if ((error = sc_js_nest(&js)) != 0 || (error = sc_js_flows(&js)) != 0)
		goto out;
	sc_js_write(fp, &js);
	error = ferror(fp) ? EIO : 0;
out:
	sc__trace_names_free(&js.js_names);
	free(state);
	free(js.js_link);
	free(js.js_opens);
	free(js.js_sl);
	free(js.js_host);
	free(js.js_track);
	free(recs);
	return (error);
}
