/*
 * The protocol trace (narrated timeline, Chrome trace-event JSON) and the
 * collapsed-stack sampler, on the deterministic scenarios of
 * tools/scenarios.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "sample.h"
#include "sc_test.h"
#include "jtrace.h"
#include "scenarios.h"
#include "stackcap.h"

/* What a scenario's show() callback keeps of the machine's trace. */
struct outputs {
	char	*text;
	char	*json;
	struct sc_trace_record recs[512];
	size_t	nrecs;
};

static void
keep_trace(struct sc_machine *m, void *arg)
{
	struct outputs *o = arg;
	size_t len;
	FILE *fp;

	/* The records first: the outputs then hold at least these. */
	o->nrecs = sc_trace_snapshot(m, o->recs, 512);
	fp = open_memstream(&o->text, &len);
	assert_int_equal(sc_trace_print(m, fp), 0);
	fclose(fp);
	fp = open_memstream(&o->json, &len);
	assert_int_equal(sc_trace_write_json(m, fp), 0);
	fclose(fp);
}

static void
run_traced(const char *name, struct outputs *o)
{
	struct scn_result res;

	memset(o, 0, sizeof(*o));
	assert_int_equal(scn_run(scn_find(name), 512, keep_trace, o, &res), 0);
}

static void
free_outputs(struct outputs *o)
{
	free(o->text);
	free(o->json);
}

/* Does text contain each of lines[0..n) (as substrings), in this order? */
static void
assert_lines_in_order(const char *text, const char *const *lines, size_t n)
{
	const char *at = text;
	size_t i;

	for (i = 0; i < n; i++) {
		at = strstr(at, lines[i]);
		if (at == NULL) {
			fprintf(stderr, "%s", text);
			fail_msg("missing, or out of order: \"%s\"", lines[i]);
		}
		at += strlen(lines[i]);
	}
}

static void
test_narrated_idle_cpu(void **state)
{
	static const char *const lines[] = {
		"requester: stack_save_td(td 100002), thread lock held",
		"requester: td 100002 is running: thread_unlock(td 100002)",
		"requester: ipi_cpu(cpu",
		": IPI_TRACE received, interrupted td 1000",	/* idle */
		"stack_intr_td = td 1000",
		"requester: thread_lock(td 100002)",
		"requester: answer names td 1000",
		", not td 100002: retry (the CPU went idle)",
		"requester: td 100002 is not running: walk from its pcb_rbp",
		"requester: stack_save_td(td 100002) returns 0",
	};
	struct outputs o;

	run_traced("idle-cpu", &o);
	assert_lines_in_order(o.text, lines, sizeof(lines) / sizeof(lines[0]));
	free_outputs(&o);
}

static void
test_narrated_lost_ipi(void **state)
{
	static const char *const lines[] = {
		"requester: ipi_cpu(cpu",
		"requester: no answer for td 100002 within 50 ms",
		"requester: stack_save_td(td 100002) returns ETIMEDOUT",
		": IPI_TRACE received, interrupted td 100002",
		": IPI_TRACE finds no open request for this CPU",
	};
	struct outputs o;

	if (sc_test_env_det())
		skip();		/* no IPI is a signal there: none is lost */
	run_traced("lost-ipi", &o);
	assert_lines_in_order(o.text, lines, sizeof(lines) / sizeof(lines[0]));
	free_outputs(&o);
}

/* The user-mode capture's walk says why it found no frame. */
static void
test_narrated_user_mode(void **state)
{
	static const char *const lines[] = {
		"requester: ipi_cpu(cpu",
		": IPI_TRACE received, interrupted td 100002",
		(": walked 0 frames of td 100002 (interrupted outside the "
		    "kernel stack: user mode)"),
		"requester: stack_save_td(td 100002) returns EBUSY, 0 frames",
	};
	struct outputs o;

	run_traced("user-mode", &o);
	assert_lines_in_order(o.text, lines, sizeof(lines) / sizeof(lines[0]));
	free_outputs(&o);
}

/*
 * sc_errname() names every errno the library returns, or passes on
 * (sc_machine_create() returns pthread_create()'s EAGAIN or EPERM), and
 * those the next capabilities return (EOPNOTSUPP, ECHILD).
 */
static void
test_errname_covers_every_errno(void **state)
{
#define	E(e)	{ e, #e }
	static const struct {
		int		error;
		const char	*name;
	} errs[] = {
		{ 0, "0" }, E(EAGAIN), E(EALREADY), E(EBUSY), E(ECHILD),
		E(EDEADLK), E(EINTR), E(EINVAL), E(EIO), E(ENOENT), E(ENOMEM),
		E(EOPNOTSUPP), E(EPERM), E(ESRCH), E(ETIMEDOUT),
	};
#undef E
	size_t i;

	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		assert_string_equal(sc_errname(errs[i].error), errs[i].name);
	/* On Linux ENOTSUP is EOPNOTSUPP; elsewhere it has its own name. */
	assert_non_null(strstr(sc_errname(ENOTSUP), "NOTSUP"));
	assert_string_equal(sc_errname(EXDEV), "E?");
	assert_string_equal(sc_errname(-1), "E?");
	assert_string_equal(sc_errname(100000), "E?");
}

/* src/trace_json.c, internal (the library's sc_internal.h). */
double	sc__json_quantum(uint64_t span_ns);
void	sc__json_ts_dur(FILE *fp, double q, uint64_t t0, uint64_t t1);

/* The ts and the ts + dur a reader gets from sc__json_ts_dur()'s text. */
static void
read_ts_dur(double q, uint64_t t0, uint64_t t1, double *ts, double *end)
{
	char buf[96], *p;
	FILE *fp;

	fp = fmemopen(buf, sizeof(buf), "w");
	assert_non_null(fp);
	sc__json_ts_dur(fp, q, t0, t1);
	fclose(fp);
	assert_true(strncmp(buf, "\"ts\":", 5) == 0);
	*ts = strtod(buf + 5, &p);
	assert_true(strncmp(p, ",\"dur\":", 7) == 0);
	*end = *ts + strtod(p + 7, NULL);
}

/*
 * A slice's end, as a reader adds ts and dur in doubles, is the time of
 * its end ns: the same for every slice that ends there, and the ts of one
 * that starts there.  With three decimals 14249.853 + 403.612 read as
 * 14653.464999999998 and 14251.015 + 402.450 as 14653.465: a snapshot
 * round ended before the IPI waits inside it, and speedscope lost the rest
 * of the requester's profile (trace_speedscope failed now and then).
 */
static void
test_json_slice_ends_exact(void **state)
{
	double q = sc__json_quantum(14826223), ts, end, ts2, end2, ts3, end3;
	uint64_t t0, t1, span;
	unsigned seed = 1;
	int i;

	(void)state;
	read_ts_dur(q, 14249853, 14653465, &ts, &end);
	read_ts_dur(q, 14251015, 14653465, &ts2, &end2);
	read_ts_dur(q, 14653465, 14826223, &ts3, &end3);
	assert_true(end == end2 && end == ts3);
	/* Times within a ns of their own; ends on starts, for any span. */
	for (i = 0; i < 200000; i++) {
		t0 = ((uint64_t)rand_r(&seed) << 16 ^ (uint64_t)rand_r(&seed)) %
		    (i % 2 ? 100000 : 100000000000ULL);
		t1 = t0 + (uint64_t)rand_r(&seed) % (i % 3 ? 1000000 : 1000);
		span = t1 + (uint64_t)rand_r(&seed) % 100000000;
		q = sc__json_quantum(span);
		read_ts_dur(q, t0, t1, &ts, &end);
		read_ts_dur(q, t1, span, &ts2, &end2);
		if (end != ts2 || ts * 1000 < (double)t0 - 0.001 ||
		    ts * 1000 > (double)t0 + 0.001)
			fail_msg("slice %" PRIu64 "-%" PRIu64 " ns (trace %"
			    PRIu64 "): ts %.17g, ends at %.17g, the next "
			    "starts at %.17g", t0, t1, span, ts, end, ts2);
	}
}

/* The JSON parses, and every IPI sent has one handler event (same id). */
static void
test_json_parses_and_links_ipis(void **state)
{
	static const char *const scenarios[] = { "running", "idle-cpu",
	    "other-thread", "interrupts-disabled" };
	const cJSON *ev, *ph, *name, *args, *id, *event;
	int nsent, nrecv, nflow_s, nflow_f, nmeta;
	struct outputs o;
	cJSON *root, *evs;
	size_t k;

	for (k = 0; k < sizeof(scenarios) / sizeof(scenarios[0]); k++) {
		run_traced(scenarios[k], &o);
		root = cJSON_Parse(o.json);
		if (root == NULL)
			fail_msg("%s: JSON does not parse near: %.40s",
			    scenarios[k], cJSON_GetErrorPtr());
		evs = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
		assert_true(cJSON_IsArray(evs));
		nsent = nrecv = nflow_s = nflow_f = nmeta = 0;
		cJSON_ArrayForEach(ev, evs) {
			ph = cJSON_GetObjectItemCaseSensitive(ev, "ph");
			name = cJSON_GetObjectItemCaseSensitive(ev, "name");
			assert_true(cJSON_IsString(ph) && cJSON_IsString(name));
			assert_non_null(cJSON_GetObjectItemCaseSensitive(ev,
			    "pid"));
			assert_non_null(cJSON_GetObjectItemCaseSensitive(ev,
			    "tid"));
			if (strcmp(ph->valuestring, "M") == 0) {
				nmeta++;
				continue;
			}
			assert_true(cJSON_IsNumber(
			    cJSON_GetObjectItemCaseSensitive(ev, "ts")));
			if (strcmp(ph->valuestring, "s") == 0 ||
			    strcmp(ph->valuestring, "f") == 0) {
				id = cJSON_GetObjectItemCaseSensitive(ev, "id");
				assert_true(cJSON_IsNumber(id));
				if (ph->valuestring[0] == 's')
					nflow_s++;
				else
					nflow_f++;
				continue;
			}
			if (strcmp(ph->valuestring, "X") == 0)
				continue;	/* test_json_viewer_rules */
			args = cJSON_GetObjectItemCaseSensitive(ev, "args");
			assert_true(cJSON_IsString(
			    cJSON_GetObjectItemCaseSensitive(args, "text")));
			event = cJSON_GetObjectItemCaseSensitive(args, "event");
			assert_true(cJSON_IsString(event) &&
			    strcmp(event->valuestring, name->valuestring) == 0);
			if (strcmp(name->valuestring, "IPI_SENT") == 0)
				nsent++;
			if (strcmp(name->valuestring, "IPI_RECEIVED") == 0)
				nrecv++;
		}
		/* A track per CPU and per plain pthread, a name each. */
		assert_true(nmeta >= 3);
		assert_true(nsent >= 1);
		assert_int_equal(nrecv, nsent);
		assert_int_equal(nflow_s, nsent);
		assert_int_equal(nflow_f, nrecv);
		cJSON_Delete(root);
		free_outputs(&o);
	}
}

/* Each scenario's JSON follows the rules, with a slice per capture. */
static void
test_json_viewer_rules(void **state)
{
	struct jtrace jt;
	struct outputs o;
	size_t k;

	for (k = 0; k < scn_nscenarios; k++) {
#if defined(SC_SANITIZER_THREAD)
		/* TSan holds the clock's signal until the spinning target
		 * calls in, which it never does: the scenario cannot run. */
		if ((scn_scenarios[k].flags & SCN_CLOCK) != 0)
			continue;
#endif
		run_traced(scn_scenarios[k].name, &o);
		jtrace_parse(&jt, o.json);
		if (jtrace_check_records(&jt, o.recs, o.nrecs) < 1)
			fail_msg("%s: no capture in the trace",
			    scn_scenarios[k].name);
		jtrace_free(&jt);
		free_outputs(&o);
	}
}

/*
 * Two plain pthreads that capture at once: a track each, named by its
 * Linux tid (the records carry it; a CPU's carry 0), and both captures
 * and both IPIs drawn.  They shared one track before, where the second
 * capture overlapped the first without nesting and was not drawn.
 */
static void
test_json_requester_tracks(void **state)
{
	struct jtrace jt;
	struct outputs o;
	size_t i;
	int nsave = 0, nflows = 0;

	run_traced("capture-parallel", &o);
	for (i = 0; i < o.nrecs; i++)
		if ((o.recs[i].cpu == SC_NOCPU) != (o.recs[i].host_tid != 0))
			fail_msg("record %zu (%s, cpu %d): host_tid %d", i,
			    sc_trace_event_name(o.recs[i].event),
			    o.recs[i].cpu, o.recs[i].host_tid);
	jtrace_parse(&jt, o.json);
	assert_int_equal(jt.nreq, 2);
	assert_true(jt.req_host[0] != jt.req_host[1]);
	for (i = 0; i < jt.nslices; i++)
		if (strcmp(jt.slices[i].name, "stack_save_td") == 0)
			nsave++;
	for (i = 0; i < jt.nflows; i++)
		if (jt.flows[i].ph[0] == 's')
			nflows++;
	assert_int_equal(nsave, 2);
	assert_int_equal(nflows, 2);
	(void)jtrace_check_records(&jt, o.recs, o.nrecs);
	jtrace_free(&jt);
	free_outputs(&o);
}

/*
 * After the ring wraps, the oldest events of a capture are gone: the JSON
 * must not keep a flow end whose IPI_SENT was overwritten, nor a slice
 * whose opening event was.  A 1-CPU machine whose only thread holds the
 * CPU: a capture is then the only source of events, and rings of 3 to 10
 * events cut it at each of its steps.
 */
static void
test_json_after_wrap(void **state)
{
	struct sc_machine_config cfg;
	struct sc_trace_record r[16];
	struct sc_machine *m;
	struct sc_proc *p;
	struct sc_thread *td;
	struct sc_stack st;
	struct jtrace jt;
	struct hold h;
	size_t len, n, i, ring;
	char *json;
	FILE *fp;
	int orphan_ends = 0;

	for (ring = 3; ring <= 10; ring++) {
		sc_machine_config_init(&cfg);
		cfg.ncpu = 1;
		cfg.trace_events = ring;
		assert_int_equal(sc_machine_create(&cfg, &m), 0);
		assert_int_equal(sc_proc_create(m, "wrap", &p), 0);
		memset(&h, 0, sizeof(h));
		assert_int_equal(sc_thread_create(p, "holder", hold_cpu, &h,
		    &td), 0);
		SC_WAIT_FOR(atomic_load(&h.holding) &&
		    sc_thread_state(td) == SC_TDS_RUNNING);
		sc_proc_lock(p);
		sc_thread_lock(td);
		assert_int_equal(sc_stack_save_td(&st, td), 0);
		sc_thread_unlock(td);
		sc_proc_unlock(p);
		n = sc_trace_snapshot(m, r, 16);
		json = NULL;
		fp = open_memstream(&json, &len);
		assert_int_equal(sc_trace_write_json(m, fp), 0);
		fclose(fp);
		jtrace_parse(&jt, json);
		(void)jtrace_check_records(&jt, r, n);
		/* Did this ring keep a handler and lose its IPI_SENT? */
		for (i = 0; i < n; i++)
			if (r[i].event == SC_TRACE_IPI_RECEIVED &&
			    !recs_have(r, 0, i, SC_TRACE_IPI_SENT, SC_NOCPU,
			    sc_thread_tid(td)))
				orphan_ends++;
		jtrace_free(&jt);
		free(json);
		atomic_store(&h.release, 1);
		assert_int_equal(sc_thread_join(td), 0);
		sc_machine_destroy(m);
	}
	/* The case this test is for did happen. */
	assert_true(orphan_ends >= 1);
}

/* Each IPI_SENT's id has exactly one IPI_RECEIVED, after it. */
static void
test_records_pair_ipis(void **state)
{
	struct outputs o;
	size_t i, j;
	int found;

	run_traced("other-thread", &o);
	assert_true(o.nrecs > 0);
	for (i = 1; i < o.nrecs; i++)
		assert_true(o.recs[i].seq > o.recs[i - 1].seq);
	for (i = 0; i < o.nrecs; i++) {
		if (o.recs[i].event != SC_TRACE_IPI_SENT)
			continue;
		found = 0;
		for (j = i + 1; j < o.nrecs; j++)
			if (o.recs[j].event == SC_TRACE_IPI_RECEIVED &&
			    o.recs[j].arg1 == o.recs[i].arg1)
				found++;
		assert_int_equal(found, 1);
	}
	free_outputs(&o);
}

/* Off by default: nothing recorded, the outputs say so. */
static void
test_trace_off(void **state)
{
	struct sc_trace_record r[4];
	struct sc_machine *m = sc_test_machine(1);

	assert_non_null(m);
	assert_int_equal(sc_trace_snapshot(m, r, 4), 0);
	assert_int_equal(sc_trace_print(m, stdout), ENOENT);
	assert_int_equal(sc_trace_write_json(m, stdout), ENOENT);
	sc_machine_destroy(m);
}

static void
noop(void *arg)
{
}

/* A small ring keeps the last events, contiguous; clear forgets them. */
static void
test_ring_wraps_and_clears(void **state)
{
	struct sc_machine_config cfg;
	struct sc_trace_record r[64];
	struct sc_machine *m;
	struct sc_proc *p;
	struct sc_thread *td;
	size_t n, i;

	sc_machine_config_init(&cfg);
	cfg.ncpu = 1;
	cfg.trace_events = 8;
	assert_int_equal(sc_machine_create(&cfg, &m), 0);
	assert_int_equal(sc_proc_create(m, "ring", &p), 0);
	for (i = 0; i < 4; i++) {
		assert_int_equal(sc_ithread_create(p, "t", noop, NULL, &td), 0);
		assert_int_equal(sc_ithread_schedule(td), 0);
		assert_int_equal(sc_thread_join(td), 0);
	}
	n = sc_trace_snapshot(m, r, 64);
	assert_int_equal(n, 8);
	for (i = 1; i < n; i++)
		assert_int_equal(r[i].seq, r[i - 1].seq + 1);
	assert_true(r[0].seq >= 8);
	sc_trace_clear(m);
	assert_int_equal(sc_trace_snapshot(m, r, 64), 0);
	sc_machine_destroy(m);
}

/* --- Sampling --- */

static int sleeper_wchan;

SC_NOIPA static void
leaf(void)
{
	sc_sleep(&sleeper_wchan, "leaf");
	SC_BARRIER();
}

SC_NOIPA static void
middle(void *arg)
{
	leaf();
	SC_BARRIER();
}

static void
test_collapsed_format(void **state)
{
	struct sc_machine *m = sc_test_machine(2);
	struct sc_proc *p;
	struct sc_thread *td;
	char *text = NULL, *line, *save;
	regex_t re;
	size_t len;
	FILE *fp;
	int nlines = 0, found = 0;

	assert_int_equal(sc_proc_create(m, "sampled", &p), 0);
	assert_int_equal(sc_thread_create(p, "sleeper", middle, NULL, &td), 0);
	SC_WAIT_STATE(td, SC_TDS_INHIBITED, SC_TDI_SLEEPING);
	fp = open_memstream(&text, &len);
	assert_int_equal(smp_collapsed(m, 5, fp), 0);
	fclose(fp);
	/* "frame;frame;...;frame count": no spaces inside, root first. */
	assert_int_equal(regcomp(&re, "^[^ ;]+(;[^ ;]+)+ [1-9][0-9]*$",
	    REG_EXTENDED | REG_NOSUB), 0);
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		nlines++;
		if (regexec(&re, line, 0, NULL, 0) != 0)
			fail_msg("not a collapsed line: \"%s\"", line);
		if (strncmp(line, "sampled;", 8) == 0) {
			assert_non_null(strstr(line, ";middle;leaf;sc_sleep;"));
			assert_non_null(strstr(line, " 5"));
			found++;
		}
	}
	assert_int_equal(found, 1);
	assert_true(nlines >= 2);	/* the idle threads too */
	regfree(&re);
	free(text);
	sc_wakeup(&sleeper_wchan);
	assert_int_equal(sc_thread_join(td), 0);
	sc_machine_destroy(m);
}

/*
 * A thread's run slice on its CPU's track is named after the thread (its
 * td_name, procstat's TDNAME): "NAME (td N)", with args td and tdname; the
 * name escaped for JSON (a quote, a backslash, a tab), and found after the
 * thread was joined (its struct, not reused yet, keeps it).  Before, the
 * slice was "td N" only.
 */
static void
test_json_run_names(void **state)
{
	static const char name[] = "q\"u\\o\tx";
	struct sc_machine_config cfg;
	struct sc_machine *m;
	struct sc_proc *p;
	struct sc_thread *td;
	struct jtrace jt;
	char want[64], *json = NULL;
	const char *tdname;
	size_t len, i;
	FILE *fp;
	int tid, named = 0;

	(void)state;
	sc_machine_config_init(&cfg);
	cfg.ncpu = 1;
	cfg.trace_events = 256;
	assert_int_equal(sc_machine_create(&cfg, &m), 0);
	assert_int_equal(sc_proc_create(m, "names", &p), 0);
	assert_int_equal(sc_thread_create(p, name, noop, NULL, &td), 0);
	tid = sc_thread_tid(td);
	assert_int_equal(sc_thread_join(td), 0);
	fp = open_memstream(&json, &len);
	assert_int_equal(sc_trace_write_json(m, fp), 0);
	fclose(fp);
	jtrace_parse(&jt, json);
	snprintf(want, sizeof(want), "%s (td %d)", name, tid);
	for (i = 0; i < jt.nslices; i++) {
		if (strcmp(jt.slices[i].cat, "sched") != 0 ||
		    jt.slices[i].td != tid)
			continue;
		tdname = jstr(cJSON_GetObjectItemCaseSensitive(
		    jt.slices[i].ev, "args"), "tdname");
		if (tdname == NULL || strcmp(tdname, name) != 0)
			fail_msg("td %d's slice: tdname \"%s\"", tid,
			    tdname != NULL ? tdname : "(none)");
		assert_string_equal(jt.slices[i].name, want);
		named++;
	}
	assert_true(named >= 1);
	jtrace_free(&jt);
	free(json);
	sc_machine_destroy(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_narrated_idle_cpu),
		cmocka_unit_test(test_narrated_lost_ipi),
		cmocka_unit_test(test_narrated_user_mode),
		cmocka_unit_test(test_errname_covers_every_errno),
		cmocka_unit_test(test_json_slice_ends_exact),
		cmocka_unit_test(test_json_parses_and_links_ipis),
		cmocka_unit_test(test_json_viewer_rules),
		cmocka_unit_test(test_json_after_wrap),
		cmocka_unit_test(test_json_run_names),
		cmocka_unit_test(test_json_requester_tracks),
		cmocka_unit_test(test_records_pair_ipis),
		cmocka_unit_test(test_trace_off),
		cmocka_unit_test(test_ring_wraps_and_clears),
		cmocka_unit_test(test_collapsed_format),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
