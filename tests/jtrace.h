/*
 * jtrace: the rules every viewer needs of the Chrome trace-event JSON of
 * sc_trace_write_json(), checked with cJSON, for tests/test_trace.c.
 * Include after sc_test.h (CMocka) and <cjson/cJSON.h>.
 */
#ifndef JTRACE_H
#define JTRACE_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "stackcap.h"

/* An event of the JSON: an X slice, a flow event or an instant. */
struct jev {
	const cJSON	*ev;
	const char	*name;
	const char	*ph;
	const char	*cat;
	double		pid, tid, ts, dur;
	double		id;		/* flows */
	int		td;		/* slices: args.td */
};

struct jtrace {
	cJSON		*root;
	struct jev	*slices, *flows, *instants;
	size_t		nslices, nflows, ninstants;
	double		cpu_tid[8];	/* thread_name "cpuN" -> tid */
	int		req_host[16];	/* thread_name "pthread H": H */
	double		req_tid[16];	/* ... its tid */
	int		nreq;
	int		ncpu;
};

static double
jnum(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!cJSON_IsNumber(v))
		fail_msg("\"%s\" is not a number", key);
	return (v->valuedouble);
}

static const char *
jstr(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return (cJSON_IsString(v) ? v->valuestring : NULL);
}

/* How many of evs[0..n) of category cat are on (pid, tid) at ts exactly. */
static int
jcount_at(const struct jev *evs, size_t n, const char *cat, double pid,
    double tid, double ts)
{
	size_t i;
	int found = 0;

	for (i = 0; i < n; i++)
		if (evs[i].pid == pid && evs[i].tid == tid && evs[i].ts == ts &&
		    strcmp(evs[i].cat, cat) == 0)
			found++;
	return (found);
}

/* Slices by track, then start, the longer first: the order of nesting. */
static int
jev_nest_cmp(const void *pa, const void *pb)
{
	const struct jev *a = pa, *b = pb;

	if (a->tid != b->tid)
		return (a->tid < b->tid ? -1 : 1);
	if (a->ts != b->ts)
		return (a->ts < b->ts ? -1 : 1);
	if (a->dur != b->dur)
		return (a->dur > b->dur ? -1 : 1);
	return (0);
}

/*
 * The slices of each track nest as a reader sees them, adding ts and dur
 * in doubles with no slack: a slice that starts inside another ends at
 * its end or before.  speedscope drops the end of a slice that ends, by
 * one ulp, after the one it nests in, and loses the rest of the track.
 */
static void
jtrace_check_nesting(const struct jtrace *jt)
{
	struct jev *v;
	double open[64];
	size_t i;
	int depth = 0;

	if (jt->nslices == 0)
		return;
	v = malloc(jt->nslices * sizeof(*v));
	assert_non_null(v);
	memcpy(v, jt->slices, jt->nslices * sizeof(*v));
	qsort(v, jt->nslices, sizeof(*v), jev_nest_cmp);
	for (i = 0; i < jt->nslices; i++) {
		if (i > 0 && v[i].tid != v[i - 1].tid)
			depth = 0;
		while (depth > 0 && open[depth - 1] <= v[i].ts)
			depth--;
		if (depth > 0 && v[i].ts + v[i].dur > open[depth - 1])
			fail_msg("track %.0f: slice \"%s\" at %.3f ends at "
			    "%.17g, after the slice it starts in (%.17g)",
			    v[i].tid, v[i].name, v[i].ts, v[i].ts + v[i].dur,
			    open[depth - 1]);
		assert_true(depth < 64);
		open[depth++] = v[i].ts + v[i].dur;
	}
	free(v);
}

/*
 * Parse json and check the rules that make every viewer read it: the
 * protocol's events in one category, "stackcap", and the slices of no
 * event (threads on CPUs, tracks' spans) in "sched"; no tid 0 (some
 * Perfetto builds drop it); a thread_name per track, and on each track an
 * X slice, the first of them in track order (the viewers list tracks in
 * the order of their first events), and slices from the trace's start to
 * its end (speedscope lines up its profiles by them); every flow start and
 * end on the ts of one "stackcap" X slice of its pid/tid and of no other
 * "stackcap" event there (Chrome DevTools binds a flow to an event of the
 * same cat, pid, tid and ts), the end with "bp":"e"; no flow end without
 * its start, and one start and one end per id; each track's slices nest
 * (jtrace_check_nesting()).
 */
static void
jtrace_parse(struct jtrace *jt, const char *json)
{
	const cJSON *ev, *evs, *args, *bp;
	const char *ph, *cat, *tname;
	struct jev *e;
	double ntracks = 0, last_first = 0, t0[32], t1[32], end = 0;
	size_t i, j, n;
	int cpu, host, nstart, nend, k;

	memset(jt, 0, sizeof(*jt));
	for (k = 0; k < 32; k++)
		t0[k] = t1[k] = -1;
	for (i = 0; i < 8; i++)
		jt->cpu_tid[i] = -1;
	if ((jt->root = cJSON_Parse(json)) == NULL)
		fail_msg("JSON does not parse near: %.40s",
		    cJSON_GetErrorPtr());
	evs = cJSON_GetObjectItemCaseSensitive(jt->root, "traceEvents");
	assert_true(cJSON_IsArray(evs));
	n = (size_t)cJSON_GetArraySize(evs);
	jt->slices = calloc(n, sizeof(*jt->slices));
	jt->flows = calloc(n, sizeof(*jt->flows));
	jt->instants = calloc(n, sizeof(*jt->instants));
	assert_true(jt->slices != NULL && jt->flows != NULL &&
	    jt->instants != NULL);
	cJSON_ArrayForEach(ev, evs) {
		ph = jstr(ev, "ph");
		assert_non_null(ph);
		if (jnum(ev, "tid") == 0)
			fail_msg("%s event \"%s\" on tid 0", ph,
			    jstr(ev, "name"));
		if (strcmp(ph, "M") == 0) {
			args = cJSON_GetObjectItemCaseSensitive(ev, "args");
			tname = jstr(args, "name");
			if (strcmp(jstr(ev, "name"), "thread_name") != 0 ||
			    tname == NULL)
				continue;
			if (jnum(ev, "tid") > ntracks)
				ntracks = jnum(ev, "tid");
			if (sscanf(tname, "pthread %d", &host) == 1 &&
			    jt->nreq < 16) {
				jt->req_host[jt->nreq] = host;
				jt->req_tid[jt->nreq++] = jnum(ev, "tid");
			} else if (sscanf(tname, "cpu%d", &cpu) == 1 &&
			    cpu >= 0 && cpu < 8) {
				jt->cpu_tid[cpu] = jnum(ev, "tid");
				if (cpu + 1 > jt->ncpu)
					jt->ncpu = cpu + 1;
			}
			continue;
		}
		cat = jstr(ev, "cat");
		if (cat == NULL)
			fail_msg("%s event \"%s\" has no cat", ph,
			    jstr(ev, "name"));
		if (strcmp(cat, "stackcap") != 0 &&
		    (strcmp(cat, "sched") != 0 || strcmp(ph, "X") != 0))
			fail_msg("%s event \"%s\" of category \"%s\"", ph,
			    jstr(ev, "name"), cat);
		if (strcmp(ph, "X") == 0)
			e = &jt->slices[jt->nslices++];
		else if (strcmp(ph, "s") == 0 || strcmp(ph, "f") == 0)
			e = &jt->flows[jt->nflows++];
		else
			e = &jt->instants[jt->ninstants++];
		e->ev = ev;
		e->ph = ph;
		e->cat = cat;
		e->name = jstr(ev, "name");
		e->pid = jnum(ev, "pid");
		e->tid = jnum(ev, "tid");
		e->ts = jnum(ev, "ts");
		if (ph[0] == 'X') {
			e->dur = jnum(ev, "dur");
			assert_true(e->dur >= 0);
			args = cJSON_GetObjectItemCaseSensitive(ev, "args");
			if (strcmp(cat, "stackcap") == 0 || cJSON_HasObjectItem(
			    args, "td"))
				e->td = (int)jnum(args, "td");
			k = (int)e->tid;
			assert_true(k >= 1 && k < 32);
			if (t0[k] < 0) {
				/* A track's first slice: tracks in order. */
				if (k < last_first)
					fail_msg("track %d's first slice after "
					    "track %.0f's", k, last_first);
				last_first = k;
				t0[k] = e->ts;
			}
			if (e->ts + e->dur > t1[k])
				t1[k] = e->ts + e->dur;
			if (t1[k] > end)
				end = t1[k];
		} else if (ph[0] == 's' || ph[0] == 'f')
			e->id = jnum(ev, "id");
	}
	jtrace_check_nesting(jt);
	assert_true(jt->ncpu >= 1);
	for (cpu = 0; cpu < jt->ncpu; cpu++)
		assert_true(jt->cpu_tid[cpu] > 0);
	/* ts + dur rounds: a sub-ns slack. */
	for (k = 1; k <= (int)ntracks && k < 32; k++)
		if (t0[k] != 0 || t1[k] < end - 0.0005)
			fail_msg("track %d: slices from %.3f to %.3f, the "
			    "trace from 0 to %.3f", k, t0[k], t1[k], end);
	for (i = 0; i < jt->nflows; i++) {
		e = &jt->flows[i];
		if (jcount_at(jt->slices, jt->nslices, "stackcap", e->pid,
		    e->tid, e->ts) != 1 || jcount_at(jt->instants,
		    jt->ninstants, "stackcap", e->pid, e->tid, e->ts) != 0)
			fail_msg("flow %s %.0f at ts %.3f tid %.0f: not one X "
			    "slice and nothing else there", e->ph, e->id, e->ts,
			    e->tid);
		if (e->ph[0] == 'f') {
			bp = cJSON_GetObjectItemCaseSensitive(e->ev, "bp");
			assert_true(cJSON_IsString(bp) &&
			    strcmp(bp->valuestring, "e") == 0);
		}
		nstart = nend = 0;
		for (j = 0; j < jt->nflows; j++) {
			if (jt->flows[j].id != e->id ||
			    strcmp(jt->flows[j].name, e->name) != 0)
				continue;
			if (jt->flows[j].ph[0] == 's') {
				nstart++;
				if (e->ph[0] == 'f')
					assert_true(jt->flows[j].ts <= e->ts);
			} else
				nend++;
		}
		if (nstart != 1 || nend != 1)
			fail_msg("flow %.0f: %d starts, %d ends", e->id, nstart,
			    nend);
	}
}

static void
jtrace_free(struct jtrace *jt)
{
	cJSON_Delete(jt->root);
	free(jt->slices);
	free(jt->flows);
	free(jt->instants);
}

/* The JSON tid of the track of a record: its CPU's, or its pthread's. */
static double
jtrace_track(const struct jtrace *jt, const struct sc_trace_record *r)
{
	int k;

	if (r->cpu == SC_NOCPU) {
		for (k = 0; k < jt->nreq; k++)
			if (jt->req_host[k] == r->host_tid)
				return (jt->req_tid[k]);
		fail_msg("no track \"pthread %d\"", r->host_tid);
	}
	assert_true(r->cpu >= 0 && r->cpu < jt->ncpu);
	return (jt->cpu_tid[r->cpu]);
}

/* How many X slices named `name` about td are on the track of r. */
static int
jtrace_count(const struct jtrace *jt, const char *name,
    const struct sc_trace_record *r, int td)
{
	double tid = jtrace_track(jt, r);
	size_t i;
	int n = 0;

	for (i = 0; i < jt->nslices; i++)
		if (jt->slices[i].tid == tid && jt->slices[i].td == td &&
		    strcmp(jt->slices[i].name, name) == 0)
			n++;
	return (n);
}

/* Is there a flow (start and end) for IPI id? */
static bool
jtrace_has_flow(const struct jtrace *jt, uint64_t id)
{
	size_t i;
	int n = 0;

	for (i = 0; i < jt->nflows; i++)
		if (jt->flows[i].id == (double)id)
			n++;
	return (n == 2);
}

/* Is there a record of `event` on cpu about tid in recs[from..to)? */
static bool
recs_have(const struct sc_trace_record *recs, size_t from, size_t to,
    int event, int cpu, int tid)
{
	size_t i;

	for (i = from; i < to; i++)
		if (recs[i].event == event && recs[i].cpu == cpu &&
		    recs[i].tid == tid)
			return (true);
	return (false);
}

/* The first record of `event` on cpu about tid in recs[from..n), or n. */
static size_t
recs_next(const struct sc_trace_record *recs, size_t from, size_t n,
    int event, int cpu, int tid)
{
	for (; from < n; from++)
		if (recs[from].event == event && recs[from].cpu == cpu &&
		    recs[from].tid == tid)
			break;
	return (from);
}

/* Are two records on one track: one CPU, or one plain pthread? */
static bool
recs_same_track(const struct sc_trace_record *a,
    const struct sc_trace_record *b)
{
	return (a->cpu == b->cpu && (a->cpu != SC_NOCPU ||
	    a->host_tid == b->host_tid));
}

/*
 * Does the capture that ends at recs[i] overlap another capture on its
 * track without nesting?  Such a capture is not drawn (trace_json.c).
 * Each plain pthread has a track of its own, so only a requester that is a
 * simulated thread, switched out in mid-capture, can have one.
 */
static bool
recs_capture_clashes(const struct sc_trace_record *recs, size_t n, size_t i)
{
	size_t b, k, d;

	if (i >= n)
		return (false);
	for (b = i; b-- > 0;)
		if (recs[b].event == SC_TRACE_CAPTURE_BEGIN &&
		    recs_same_track(&recs[b], &recs[i]) &&
		    recs[b].tid == recs[i].tid)
			break;
	for (k = 0; k < n; k++) {
		if (k == b || recs[k].event != SC_TRACE_CAPTURE_BEGIN ||
		    !recs_same_track(&recs[k], &recs[i]))
			continue;
		d = recs_next(recs, k + 1, n, SC_TRACE_CAPTURE_DONE,
		    recs[k].cpu, recs[k].tid);
		if (d == n)
			continue;
		if ((k < b && d > b && d < i) || (k > b && k < i && d > i))
			return (true);
	}
	return (false);
}

/*
 * Every capture whose CAPTURE_BEGIN and CAPTURE_DONE are both in recs is a
 * "stack_save_td" slice on the requester's track (unless it clashes with
 * another there); every handler whose
 * IPI_RECEIVED and ANSWER_PUBLISHED are both there is a
 * "stack_capture_intr" slice on its CPU's track; every IPI whose IPI_SENT
 * and IPI_RECEIVED are both there is a flow.  Returns the captures seen.
 */
static int
jtrace_check_records(const struct jtrace *jt,
    const struct sc_trace_record *recs, size_t n)
{
	size_t i, j;
	int ncaptures = 0;

	for (i = 0; i < n; i++) {
		switch (recs[i].event) {
		case SC_TRACE_CAPTURE_DONE:
			if (!recs_have(recs, 0, i, SC_TRACE_CAPTURE_BEGIN,
			    recs[i].cpu, recs[i].tid))
				break;
			ncaptures++;
			if (recs_capture_clashes(recs, n, i))
				break;
			if (jtrace_count(jt, "stack_save_td", &recs[i],
			    recs[i].tid) < 1)
				fail_msg("capture of td %d: no slice",
				    recs[i].tid);
			break;
		case SC_TRACE_ANSWER_PUBLISHED:
			if (!recs_have(recs, 0, i, SC_TRACE_IPI_RECEIVED,
			    recs[i].cpu, recs[i].tid))
				break;
			if (jtrace_count(jt, "stack_capture_intr",
			    &recs[i], recs[i].tid) < 1)
				fail_msg("handler on cpu%d: no slice",
				    recs[i].cpu);
			break;
		case SC_TRACE_IPI_SENT:
			for (j = i + 1; j < n; j++)
				if (recs[j].event == SC_TRACE_IPI_RECEIVED &&
				    recs[j].arg1 == recs[i].arg1)
					break;
			/* A wait inside a capture that is not drawn may
			 * have no slice to start a flow on. */
			if (j < n && recs_capture_clashes(recs, n,
			    recs_next(recs, i, n, SC_TRACE_CAPTURE_DONE,
			    recs[i].cpu, recs[i].tid)))
				break;
			if (j < n && !jtrace_has_flow(jt, recs[i].arg1))
				fail_msg("ipi %" PRIu64 ": no flow",
				    recs[i].arg1);
			break;
		}
	}
	return (ncaptures);
}

#endif /* !JTRACE_H */
