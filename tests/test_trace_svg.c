/*
 * sc_trace_write_svg() on the scenarios of tools/scenarios.c: the picture
 * has a lane for each CPU and each requester, an arrow for each IPI the
 * trace holds, a labelled row for each retry, NOCPU spin and error, the
 * threads' slices, and nothing that a viewer would fetch or run.
 * tools/check_svg.sh renders the pictures the demo writes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_test.h"
#include "scenarios.h"
#include "stackcap.h"

#define NRECS	2048

struct pic {
	char	*svg;
	struct sc_trace_record recs[NRECS];
	size_t	nrecs;
	int	ncpu;
	char	idle0[32];	/* cpu0's idle thread's name */
};

static void
keep_svg(struct sc_machine *m, void *arg)
{
	struct pic *p = arg;
	size_t len;
	FILE *fp;

	/* The records first: the picture then holds at least these. */
	p->nrecs = sc_trace_snapshot(m, p->recs, NRECS);
	p->ncpu = sc_machine_ncpu(m);
	snprintf(p->idle0, sizeof(p->idle0), "%s",
	    sc_thread_name(sc_machine_idlethread(m, 0)));
	fp = open_memstream(&p->svg, &len);
	assert_non_null(fp);
	assert_int_equal(sc_trace_write_svg(m, fp, "a & <b>"), 0);
	assert_int_equal(fclose(fp), 0);
}

static struct pic *
draw(const char *name, struct scn_result *res)
{
	struct pic *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	assert_int_equal(scn_run(scn_find(name), NRECS, keep_svg, p, res), 0);
	assert_true(p->nrecs < NRECS);	/* the ring did not wrap */
	return (p);
}

static size_t
count(const char *hay, const char *needle)
{
	size_t n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return (n);
}

static size_t
nevents(const struct pic *p, int event)
{
	size_t i, n = 0;

	for (i = 0; i < p->nrecs; i++)
		n += p->recs[i].event == event;
	return (n);
}

static void
assert_has(const char *svg, const char *needle)
{
	if (strstr(svg, needle) == NULL) {
		fprintf(stderr, "%s", svg);
		fail_msg("the picture has no \"%s\"", needle);
	}
}

/*
 * What every picture must have: a document, balanced groups and texts,
 * nothing fetched or run, the title escaped, a lane per CPU (and no more),
 * a requester lane when a plain pthread captured, an arrow per IPI_SENT
 * with its id, and a row of its kind for each retry, NOCPU, timeout,
 * stale IPI.
 */
static void
check_picture(const struct pic *p)
{
	const struct sc_trace_record *r;
	const char *svg = p->svg;
	char s[160];
	size_t i;
	int c;
	bool plain = false;

	assert_true(strncmp(svg, "<?xml version=\"1.0\"", 19) == 0);
	assert_has(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\"");
	assert_true(strcmp(svg + strlen(svg) - 7, "</svg>\n") == 0);
	assert_int_equal(count(svg, "<g ") + count(svg, "<g>"),
	    count(svg, "</g>"));
	assert_int_equal(count(svg, "<text "), count(svg, "</text>"));
	assert_int_equal(count(svg, "<script"), 0);
	assert_int_equal(count(svg, "href="), 0);
	assert_int_equal(count(svg, "@import"), 0);
	assert_int_equal(count(svg, "<image"), 0);
	assert_has(svg, "<title>a &amp; &lt;b&gt;</title>");
	for (c = 0; c <= p->ncpu; c++) {
		snprintf(s, sizeof(s), "class=\"lane\" data-lane=\"cpu%d\"", c);
		assert_int_equal(count(svg, s), c < p->ncpu ? 1 : 0);
	}
	snprintf(s, sizeof(s), ">%s</text>", p->idle0);
	assert_has(svg, s);	/* a slice named by its thread */
	assert_int_equal(count(svg, "<g class=\"ipi\" data-ipi=\""),
	    nevents(p, SC_TRACE_IPI_SENT));
	for (i = 0; i < p->nrecs; i++) {
		r = &p->recs[i];
		if (r->cpu == SC_NOCPU && r->event == SC_TRACE_CAPTURE_BEGIN)
			plain = true;
		if (r->event == SC_TRACE_IPI_SENT) {
			snprintf(s, sizeof(s), "<g class=\"ipi\" data-ipi=\"%"
			    PRIu64 "\">", r->arg1);
			assert_int_equal(count(svg, s), 1);
		} else if (r->event == SC_TRACE_RETRY) {
			snprintf(s, sizeof(s), "not td %d: retry (%s)", r->tid,
			    r->arg1 == 1 ? "the CPU went idle" :
			    "another thread runs there");
			assert_has(svg, s);
		} else if (r->event == SC_TRACE_CAPTURE_DONE) {
			snprintf(s, sizeof(s), "stack_save_td(td %d) returns "
			    "%s", r->tid, sc_errname((int)r->arg0));
			assert_has(svg, s);
		}
	}
	if (plain)
		assert_has(svg, "class=\"lane\" data-lane=\"requester 1\"");
	assert_int_equal(count(svg, "<g class=\"row retry\""),
	    nevents(p, SC_TRACE_RETRY));
	assert_int_equal(count(svg, "<g class=\"row nocpu\""),
	    nevents(p, SC_TRACE_NOCPU));
	assert_int_equal(count(svg, "<g class=\"row stale\""),
	    nevents(p, SC_TRACE_STALE_IPI));
	assert_int_equal(count(svg, "<g class=\"row error\" "
	    "data-event=\"TIMEOUT\">"), nevents(p, SC_TRACE_TIMEOUT));
}

static void
free_pic(struct pic *p)
{
	free(p->svg);
	free(p);
}

/* The idle thread answers: a retry, one arrow, the target's slice. */
static void
test_svg_idle_cpu(void **state)
{
	struct scn_result res;
	struct pic *p = draw("idle-cpu", &res);
	char s[64];

	check_picture(p);
	assert_int_equal(nevents(p, SC_TRACE_RETRY), 1);
	assert_has(p->svg, "retry (the CPU went idle)");
	snprintf(s, sizeof(s), "<g class=\"slice\" data-td=\"%d\">",
	    res.target_tid);
	assert_has(p->svg, s);
	assert_has(p->svg, "<g class=\"handler\">");
	assert_has(p->svg, "<g class=\"capture\"");
	free_pic(p);
}

static void
test_svg_other_thread(void **state)
{
	struct scn_result res;
	struct pic *p = draw("other-thread", &res);

	check_picture(p);
	assert_has(p->svg, "retry (another thread runs there)");
	free_pic(p);
}

/* NOCPU: no IPI, so no arrow. */
static void
test_svg_switch_off(void **state)
{
	struct scn_result res;
	struct pic *p = draw("switch-off", &res);

	check_picture(p);
	assert_true(nevents(p, SC_TRACE_NOCPU) >= 1);
	assert_int_equal(count(p->svg, "<g class=\"ipi\""), 0);
	assert_has(p->svg, "td_oncpu NOCPU: spin, no IPI");
	free_pic(p);
}

/* The bound expires, the late handler does nothing. */
static void
test_svg_lost_ipi(void **state)
{
	struct scn_result res;
	struct pic *p;

	if (sc_test_env_det())
		skip();		/* no IPI is a signal there: none is lost */
	p = draw("lost-ipi", &res);
	check_picture(p);
	assert_has(p->svg, "returns ETIMEDOUT");
	assert_int_equal(count(p->svg, "<g class=\"row stale\""), 1);
	free_pic(p);
}

static void
test_svg_user_mode(void **state)
{
	struct scn_result res;
	struct pic *p = draw("user-mode", &res);

	check_picture(p);
	assert_has(p->svg, "returns EBUSY");
	assert_has(p->svg, "walked 0 frames of td");
	free_pic(p);
}

/* Two plain pthreads capture at once: a lane each, two arrows. */
static void
test_svg_two_requesters(void **state)
{
	struct scn_result res;
	struct pic *p = draw("capture-parallel", &res);

	check_picture(p);
	assert_has(p->svg, "class=\"lane\" data-lane=\"requester 2\"");
	assert_int_equal(count(p->svg, "class=\"lane\" data-lane=\"requester"),
	    2);
	assert_int_equal(count(p->svg, "<g class=\"ipi\""), 2);
	free_pic(p);
}

/* A snapshot: one requester lane (its walks of the threads that do not
 * run are its own), three CPUs, an arrow per IPI of its round. */
static void
test_svg_snapshot(void **state)
{
	struct scn_result res;
	struct pic *p = draw("snapshot", &res);

	check_picture(p);
	assert_int_equal(p->ncpu, 3);
	assert_int_equal(count(p->svg, "class=\"lane\" data-lane=\"requester"),
	    1);
	assert_has(p->svg, "<g class=\"snapshot\"");
	free_pic(p);
}

/* kib's catch: the answer seen before any handler ran is called old. */
static void
test_svg_stale_answer(void **state)
{
	struct scn_result res;
	struct pic *p = draw("stale-answer", &res);

	check_picture(p);
	assert_int_equal(count(p->svg, "since the IPI: an old answer"), 1);
	free_pic(p);
}

/* The trace off: ENOENT, nothing written.  A stream that fails: EIO. */
static void
test_svg_errors(void **state)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	char *buf = NULL;
	size_t len = 0;
	FILE *fp;

	assert_non_null(m = sc_test_machine(1));
	fp = open_memstream(&buf, &len);
	assert_int_equal(sc_trace_write_svg(m, fp, NULL), ENOENT);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(len, 0);
	free(buf);
	sc_machine_destroy(m);

	sc_machine_config_init(&cfg);
	cfg.ncpu = 1;
	cfg.trace_events = 64;
	assert_int_equal(sc_machine_create(&cfg, &m), 0);
	assert_non_null(fp = fopen("/dev/null", "r"));
	assert_int_equal(sc_trace_write_svg(m, fp, NULL), EIO);
	fclose(fp);
	sc_machine_destroy(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_svg_idle_cpu),
		cmocka_unit_test(test_svg_other_thread),
		cmocka_unit_test(test_svg_switch_off),
		cmocka_unit_test(test_svg_lost_ipi),
		cmocka_unit_test(test_svg_user_mode),
		cmocka_unit_test(test_svg_two_requesters),
		cmocka_unit_test(test_svg_snapshot),
		cmocka_unit_test(test_svg_stale_answer),
		cmocka_unit_test(test_svg_errors),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
