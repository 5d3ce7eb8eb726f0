/*
 * stackcap-demo: a small simulated machine whose threads sit in the states a
 * busy FreeBSD box shows, printed the way `procstat -kk -a` prints it.
 *
 * The machine has a few processes with FreeBSD-like names: kernel threads
 * asleep in named call chains (syncer, nfsd, sshd), interrupt threads that
 * never ran (empty stack), a sleeping thread whose kernel stack is swapped
 * out (<swapped>), threads running in the kernel on a CPU (bufdaemon, dd:
 * captured by an IPI while they run) and one running in user mode
 * (<running>: the IPI found no kernel frame, EBUSY).  Every thread's stack
 * comes from one sc_machine_snapshot(): the library's kern.proc.kstack for
 * every process, with all the running threads' CPUs interrupted at once.
 *
 * usage: stackcap-demo [--ncpu N] | --scenario NAME [--json FILE] |
 *        --sample N [--ncpu N] | --host-selftest [--json FILE] | --help
 * (--help lists every scenario of scn_scenarios[], from the table itself:
 * tools/check_help.c checks that none is missing.)
 *
 * main() parses the options into struct demo_opts and runs one mode from
 * demo_modes[]; a new mode (a scenario, sampling) is one more entry there.
 * The machine is built in demo_machine.c, printed in demo_procstat.c.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo.h"
#include "explore.h"
#include "sample.h"
#include "scenarios.h"
#include "stackcap.h"

/* ------------------------------------------------------------------------
 * Modes and options
 * ------------------------------------------------------------------------ */

static int
show_procstat(const struct demo_opts *o, struct sc_machine *m)
{
	demo_kstack_all(o, m);
	return (0);
}

/* The default mode: populate a machine, print it as procstat -kk -a. */
static int
run_procstat(const struct demo_opts *o)
{
	return (demo_world_run(o, show_procstat, "creating threads"));
}

static int
show_sample(const struct demo_opts *o, struct sc_machine *m)
{
	return (smp_collapsed(m, o->samples, stdout));
}

/* Sampling: populate the machine, write N rounds as collapsed stacks. */
static int
run_sample(const struct demo_opts *o)
{
	return (demo_world_run(o, show_sample, "sampling"));
}

static bool	show_failed;	/* an output file could not be written */

/* --svg FILE: the run as a picture, headed by the scenario's summary. */
static void
scenario_svg(const struct demo_opts *o, struct sc_machine *m)
{
	const struct scn_scenario *s = scn_find(o->scenario);
	char title[256];
	int error;

	snprintf(title, sizeof(title), "--scenario %s%s%s", o->scenario,
	    s != NULL ? ": " : "", s != NULL ? s->summary : "");
	error = sc_trace_write_svg(m, o->svg_fp, title);
	if (fclose(o->svg_fp) != 0 && error == 0)
		error = errno;
	if (error != 0) {
		fprintf(stderr, "stackcap-demo: cannot write %s: %s\n", o->svg,
		    strerror(error));
		show_failed = true;
	} else
		printf("\nSVG picture written to %s\n", o->svg);
}

/* Print a scenario's outcome and its narrated trace, before teardown. */
static void
scenario_show(struct sc_machine *m, void *arg)
{
	const struct demo_opts *o = arg;
	FILE *fp;

	printf("\nNarrated trace:\n");
	sc_trace_print(m, stdout);
	if (o->svg_fp != NULL)
		scenario_svg(o, m);
	if (o->json == NULL)
		return;
	if ((fp = fopen(o->json, "w")) == NULL ||
	    sc_trace_write_json(m, fp) != 0 || fclose(fp) != 0)
		fprintf(stderr, "stackcap-demo: cannot write %s\n", o->json);
	else
		printf("\nChrome trace-event JSON written to %s (open it in "
		    "https://ui.perfetto.dev or chrome://tracing)\n", o->json);
}

static int	run_scenario_seed(const struct demo_opts *o);
static int	run_scenario_schedule(const struct demo_opts *o);

/*
 * A race of the protocol, run on demand, with its narrated trace; with
 * --seed, one run of the explorer body of that name instead.
 */
static int
run_scenario(const struct demo_opts *o)
{
	const struct scn_scenario *s = scn_find(o->scenario);
	struct scn_result res;
	char buf[2048];
	int error;

	if (o->seed != 0)
		return (run_scenario_seed(o));
	if (o->schedule != NULL)
		return (run_scenario_schedule(o));
	if (s == NULL) {
		fprintf(stderr, "stackcap-demo: no scenario \"%s\" (see "
		    "--help)\n", o->scenario);
		return (2);
	}
	printf("Scenario %s: %s\n", s->name, s->summary);
	printf("(%d simulated CPU%s, %s scheduler, %s protocol, bounded wait "
	    "%ld ms)\n", s->ncpu, s->ncpu > 1 ? "s" : "",
	    s->sched == SCN_SCHED_4BSD ? "4BSD" : s->sched == SCN_SCHED_ULE ?
	    "ULE" : "the default", s->protocol == SC_PROTO_NMI ?
	    "FreeBSD 12's NMI" : "the IPI", s->timeout_ns / 1000000);
	error = scn_run(s, 4096, scenario_show, (void *)o, &res);
	sc_stack_format_kk(&res.stack, buf, sizeof(buf));
	printf("\nsc_stack_save_td(td %d) returned %s; stack: %s\n",
	    res.target_tid, sc_errname(res.error), res.stack.depth > 0 ? buf :
	    "(empty)");
	if (res.answer_tid != 0 && res.answer_tid != res.target_tid)
		printf("the pointer asked for names td %d now: td %d exited "
		    "and its struct was reused (%lu reused); the stack is td "
		    "%d's, not td %d's\n", res.answer_tid, res.target_tid,
		    (unsigned long)res.cnt.thread_reuses, res.answer_tid,
		    res.target_tid);
	printf("counters: ipis sent %lu, deferred %lu, answered %lu, stale "
	    "%lu; retries nocpu %lu, idle %lu, other %lu; timeouts %lu\n",
	    (unsigned long)res.cnt.ipis_sent,
	    (unsigned long)res.cnt.ipis_deferred,
	    (unsigned long)res.cnt.trace_answered,
	    (unsigned long)res.cnt.trace_stale,
	    (unsigned long)res.cnt.retry_nocpu,
	    (unsigned long)res.cnt.retry_idle,
	    (unsigned long)res.cnt.retry_other,
	    (unsigned long)res.cnt.timeouts);
	if (s->protocol == SC_PROTO_NMI)
		printf("NMI protocol: nmis sent %lu, answered %lu, EAGAIN %lu; "
		    "a second capture returned %s\n",
		    (unsigned long)res.cnt.nmis_sent,
		    (unsigned long)res.cnt.nmis_answered,
		    (unsigned long)res.cnt.nmi_eagain, sc_errname(res.error2));
	if (res.panic[0] != '\0')
		printf("KASSERT: %s\n", res.panic);
	return (error != 0);
}

/* An explored run's outcome (enum exp_outcome), and why. */
static void
explore_say_outcome(int outcome, const char *why)
{
	printf("\n%s\n", outcome == EXP_BROKEN ? "The invariant broke:" :
	    outcome == EXP_REACHED ? "The window was reached; the invariant "
	    "held:" : "The invariant held.");
	if (why[0] != '\0')
		printf("%s\n", why);
}

/*
 * One run of an explorer body, narrated (and --json), with its outcome
 * and the command that replays it.  Returns the exit status: 0 when the
 * run gave what the caller expected (`expect`, an enum exp_outcome; -1:
 * anything), else 1.
 */
static int
explore_replay(const struct demo_opts *o, const struct exp_body *b,
    uint64_t seed, bool mistaken, int expect)
{
	char why[1024], cmd[256];
	int error, outcome;

	error = exp_run(b, seed, o->pct, mistaken, 1 << 16, scenario_show,
	    (void *)o, &outcome, why, sizeof(why));
	if (error != 0) {
		fprintf(stderr, "stackcap-demo: %s%s%s\n", sc_errname(error),
		    why[0] != '\0' ? ": " : "", why);
		return (1);
	}
	explore_say_outcome(outcome, why);
	exp_replay_cmd(b, seed, o->pct, mistaken, cmd, sizeof(cmd));
	printf("replay: %s\n", cmd);
	return (expect >= 0 && outcome != expect);
}

/* "(random, its mistake on, ULE; deterministic mode)" and the like. */
static void
explore_say_how(const struct demo_opts *o, const struct exp_body *b,
    bool mistaken)
{
	printf("(%s, ", o->pct > 0 ? "PCT" : "a random scheduler");
	if (exp_has_mistake(b))
		printf("%s %s, ", b->mistake.what, mistaken ? "on" : "off");
	else
		printf("the final protocol, ");
	printf("%s; deterministic mode)\n", exp_sched() == SC_SCHED_4BSD ?
	    "4BSD" : "ULE");
	if ((b->scheds & EXP_SCHED(exp_sched())) == 0)
		printf("(under this scheduler nothing is to be found: every "
		    "run holds)\n");
}

/* --scenario NAME --schedule S: one run of an explorer body. */
static int
run_scenario_schedule(const struct demo_opts *o)
{
	const struct exp_body *b = exp_find(o->scenario);
	char why[1024], cmd[4096];
	int error, outcome;
	bool mistaken = o->mistake != 0;

	if (b == NULL) {
		fprintf(stderr, "stackcap-demo: --schedule replays an explorer "
		    "body, and \"%s\" is none (see --help)\n", o->scenario);
		return (2);
	}
	printf("Scenario %s, a schedule, without hooks: %s\n", b->name,
	    b->summary);
	error = exp_run_schedule(b, o->schedule, mistaken, 1 << 16,
	    scenario_show, (void *)o, &outcome, why, sizeof(why));
	if (error != 0) {
		fprintf(stderr, "stackcap-demo: %s\n", why);
		return (1);
	}
	explore_say_outcome(outcome, why);
	exp_replay_schedule_cmd(b, o->schedule, mistaken, cmd, sizeof(cmd));
	printf("replay: %s\n", cmd);
	return (0);
}

/* --scenario NAME --seed S: one run of an explorer body. */
static int
run_scenario_seed(const struct demo_opts *o)
{
	const struct exp_body *b = exp_find(o->scenario);

	if (b == NULL) {
		fprintf(stderr, "stackcap-demo: --seed replays an explorer "
		    "body, and \"%s\" is none (see --help)\n", o->scenario);
		return (2);
	}
	exp_own_seed("stackcap-demo");
	printf("Scenario %s, seed %ju, without hooks: %s\n", b->name,
	    (uintmax_t)o->seed, b->summary);
	explore_say_how(o, b, o->mistake != 0);
	return (explore_replay(o, b, o->seed, o->mistake != 0, -1));
}

/*
 * A scenario of the history without its hook: seeds until one breaks its
 * invariant or reaches its window (or --seed S: that one), then that run
 * with its trace.
 */
static int
run_explore(const struct demo_opts *o)
{
	const struct exp_body *b = exp_find(o->explore);
	struct exp_found f, g;
	char cmd[sizeof(f.schedule) + 256];
	bool mistaken = o->mistake != 0;
	int error, status, runs = o->runs > 0 ? o->runs : 1000;

	if (b == NULL) {
		fprintf(stderr, "stackcap-demo: no explorable scenario \"%s\" "
		    "(see --help)\n", o->explore);
		return (2);
	}
	exp_own_seed("stackcap-demo");
	if (o->shards != 0)
		return (demo_explore_shard(o, b, runs));
	printf("Exploring %s: %s\n", b->name, b->summary);
	explore_say_how(o, b, mistaken);
	if (o->seed != 0)
		return (explore_replay(o, b, o->seed, mistaken, -1));
	if (o->jobs > 1) {
		printf("(%d processes: --shard K/%d each, merged)\n", o->jobs,
		    o->jobs);
		error = demo_explore_jobs(o, b, runs, &f);
		/* The seed's schedule, shrunk here, once. */
		if (error == 0 && f.seed != 0)
			error = exp_search(b, f.seed, 1, o->pct, mistaken,
			    EXP_MASK(b->goal) | EXP_MASK(EXP_BROKEN), true,
			    &g);
		if (error == 0 && f.seed != 0) {
			memcpy(f.schedule, g.schedule, sizeof(f.schedule));
			f.deviations = g.deviations;
			f.deviations_orig = g.deviations_orig;
			f.outcome = g.outcome;
		}
	} else
		error = exp_search(b, 1, runs, o->pct, mistaken,
		    EXP_MASK(b->goal) | EXP_MASK(EXP_BROKEN), true, &f);
	if (error != 0) {
		fprintf(stderr, "stackcap-demo: %s\n", sc_errname(error));
		return (1);
	}
	if (f.seed == 0) {
		printf("no seed of %d %s\n", f.nrun, b->goal == EXP_REACHED ?
		    "reached the window" : "broke the invariant");
		return (1);
	}
	printf("seed %ju %s, at run %ju", (uintmax_t)f.seed,
	    f.outcome == EXP_REACHED ? "reached the window" :
	    "broke the invariant", o->jobs > 1 ? (uintmax_t)f.seed :
	    (uintmax_t)f.nrun);
	if (o->jobs > 1)
		printf(" (%d runs in all, %d processes)", f.nrun, o->jobs);
	printf("\n");
	status = explore_replay(o, b, f.seed, mistaken, f.outcome);
	if (f.schedule[0] != '\0') {
		exp_replay_schedule_cmd(b, f.schedule, mistaken, cmd,
		    sizeof(cmd));
		printf("shrunk: %d deviations from the default schedule, of "
		    "the seed's %d (docs/check.md)\nreplay: %s\n",
		    f.deviations, f.deviations_orig, cmd);
	}
	return (status);
}

struct demo_mode {
	const char	*name;
	int		(*run)(const struct demo_opts *);
};

static const struct demo_mode demo_modes[] = {
	{ "procstat", run_procstat },
	{ "scenario", run_scenario },
	{ "sample", run_sample },
	{ "explore", run_explore },
	{ "host-selftest", demo_host_selftest },
};

static void
usage(FILE *fp, const char *prog)
{
	size_t i;

	fprintf(fp,
	    "usage: %s [-k | -kk] [--kernel-limits] [--ncpu N]\n"
	    "                                     procstat -kk -a view\n"
	    "       %s --scenario NAME [--json FILE] [--svg FILE]\n"
	    "                                     one race, narrated\n"
	    "       %s --scenario NAME --seed S [--pct DEPTH]\n"
	    "           [--mistake on|off] [--json FILE]\n"
	    "                                     one explored run, replayed\n"
	    "       %s --scenario NAME --schedule S [--mistake on|off]\n"
	    "           [--json FILE]             one checked run, replayed\n"
	    "       %s --sample N [--ncpu N]      collapsed stacks\n"
	    "       %s --explore NAME [--runs N] [--pct DEPTH] [--seed S]\n"
	    "           [--mistake on|off] [--jobs N | --shard K/N]\n"
	    "                                     search seeds for a mistake\n"
	    "       %s --host-selftest [--json FILE]\n"
	    "                                     this process's own threads\n"
	    "\n"
	    "Builds a simulated machine with threads asleep in named call\n"
	    "chains, interrupt threads that never ran, a swapped-out thread,\n"
	    "threads running in the kernel and one running in user mode, then\n"
	    "prints every thread's kernel stack the way `procstat -kk -a`\n"
	    "does (<swapped>, <running> for a capture that found no kernel\n"
	    "frame).\n"
	    "\n"
	    "  -k, -kk          function names, or names and offsets (the\n"
	    "                   default), as procstat -k and -kk\n"
	    "  --kernel-limits  the kernel's limits: 18 frames (STACK_MAX),\n"
	    "                   1024 bytes of trace (KKST_MAXLEN)\n"
	    "  --ncpu N         simulated CPUs (1..256, default 2)\n"
	    "  --scenario NAME  run one race of the capture protocol on\n"
	    "                   demand and print its narrated trace (below)\n"
	    "  --json FILE      with --scenario or --explore: also write the\n"
	    "                   trace as Chrome trace-event JSON (Perfetto,\n"
	    "                   chrome://tracing)\n"
	    "  --svg FILE       with --scenario: also draw the run as an SVG\n"
	    "                   picture (a lane per CPU and per requester,\n"
	    "                   an arrow per IPI)\n"
	    "  --sample N       capture every thread N times and print the\n"
	    "                   stacks collapsed\n"
	    "                   (\"comm;root;...;leaf count\"),\n"
	    "                   for flamegraph.pl, speedscope or inferno\n"
	    "  --explore NAME   run a scenario of the history without its\n"
	    "                   hook, its mistake on, in deterministic mode\n"
	    "                   over seeds 1..N until its invariant breaks\n"
	    "                   (or, with no mistake, a run reaches its\n"
	    "                   window); print that run's narrated trace and\n"
	    "                   the command that replays it (below)\n"
	    "  --runs N         with --explore: at most N seeds (default\n"
	    "                   1000)\n"
	    "  --pct DEPTH      with --explore or --seed: PCT (Burckhardt et\n"
	    "                   al., 2010) with DEPTH - 1 change points, not\n"
	    "                   a random scheduler\n"
	    "  --seed S         with --scenario or --explore: one run of the\n"
	    "                   explorer body NAME under seed S, narrated (a\n"
	    "                   replay: the same run as the search's)\n"
	    "  --schedule S     with --scenario: one run of the explorer body\n"
	    "                   NAME under the schedule S that --explore\n"
	    "                   printed (shrunk; docs/check.md)\n"
	    "  --jobs N         with --explore: the search in N processes\n"
	    "                   (1..64), merged: the same seed found\n"
	    "  --shard K/N      with --explore: part K of N of the search\n"
	    "                   (runs i with i mod N = K); prints one line,\n"
	    "                   \"shard K/N: seed S runs R\" (S 0: none); the\n"
	    "                   smallest S of the N parts is the search's\n"
	    "  --host-selftest  <stackcap/host.h> on this process: threads\n"
	    "                   spinning, sleeping, waiting on a condition\n"
	    "                   variable and one blocking the signal, one\n"
	    "                   snapshot of them printed like procstat -kk\n"
	    "                   and folded, each verdict checked (with\n"
	    "                   --json FILE: also as JSON)\n"
	    "  --mistake on|off with --explore, --seed or --schedule: the\n"
	    "                   body's mistake\n"
	    "                   (default on); off is the final protocol\n"
	    "  --help           this text\n"
	    "\n"
	    "The scheduler is ULE, or 4BSD with STACKCAP_SCHED=4bsd in the\n"
	    "environment (a replay command says which).  --scenario NAME\n"
	    "alone runs the hooked scenario; with --seed S, the explorer's\n"
	    "body of that name, without hooks, as the search ran it.\n"
	    "--explore and --seed ignore STACKCAP_SEED (and say so): the\n"
	    "explorer gives each run its seed.\n"
	    "\n"
	    "Scenarios:\n", prog, prog, prog, prog, prog, prog, prog);
	for (i = 0; i < scn_nscenarios; i++)
		fprintf(fp, "  %-20s %s\n", scn_scenarios[i].name,
		    scn_scenarios[i].summary);
	fprintf(fp, "\nExplorable (--explore; --scenario NAME --seed S):\n");
	for (i = 0; i < exp_nbodies; i++)
		fprintf(fp, "  %-20s %s\n", exp_bodies[i].name,
		    exp_bodies[i].summary);
}

/* Returns -1 to go on, or the exit status. */
static int
parse_args(int argc, char **argv, struct demo_opts *o)
{
	static const struct option longopts[] = {
		{ "ncpu", required_argument, NULL, 'n' },
		{ "scenario", required_argument, NULL, 's' },
		{ "json", required_argument, NULL, 'j' },
		{ "svg", required_argument, NULL, 'G' },
		{ "sample", required_argument, NULL, 'S' },
		{ "kernel-limits", no_argument, NULL, 'L' },
		{ "explore", required_argument, NULL, 'E' },
		{ "runs", required_argument, NULL, 'R' },
		{ "pct", required_argument, NULL, 'P' },
		{ "seed", required_argument, NULL, 'D' },
		{ "mistake", required_argument, NULL, 'M' },
		{ "schedule", required_argument, NULL, 'C' },
		{ "jobs", required_argument, NULL, 'J' },
		{ "shard", required_argument, NULL, 'H' },
		{ "host-selftest", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char *end;
	long v;
	int c, used;

	memset(o, 0, sizeof(*o));
	o->mode = "procstat";
	o->mistake = -1;
	while ((c = getopt_long(argc, argv, "kn:s:j:S:h", longopts, NULL)) !=
	    -1) {
		switch (c) {
		case 'k':
			o->kflag++;
			break;
		case 'L':
			o->kernel_limits = true;
			break;
		case 's':
			o->mode = "scenario";
			o->scenario = optarg;
			break;
		case 'j':
			o->json = optarg;
			break;
		case 'G':
			o->svg = optarg;
			break;
		case 'E':
			o->mode = "explore";
			o->explore = optarg;
			break;
		case 'R':
		case 'P':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || v < 1 ||
			    v > (c == 'R' ? 10000000 : 64)) {
				fprintf(stderr, "%s: --%s: expected 1..%d, got "
				    "\"%s\"\n", argv[0], c == 'R' ? "runs" :
				    "pct", c == 'R' ? 10000000 : 64, optarg);
				return (2);
			}
			if (c == 'R')
				o->runs = (int)v;
			else
				o->pct = (int)v;
			break;
		case 'D':
			errno = 0;
			o->seed = strtoull(optarg, &end, 0);
			if (errno != 0 || *end != '\0' || o->seed == 0) {
				fprintf(stderr, "%s: --seed: expected a "
				    "number other than 0, got \"%s\"\n",
				    argv[0], optarg);
				return (2);
			}
			break;
		case 'C':
			o->schedule = optarg;
			break;
		case 'J':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || v < 1 ||
			    v > DEMO_MAXJOBS) {
				fprintf(stderr, "%s: --jobs: expected 1..%d, "
				    "got \"%s\"\n", argv[0], DEMO_MAXJOBS,
				    optarg);
				return (2);
			}
			o->jobs = (int)v;
			break;
		case 'H':
			if (sscanf(optarg, "%u/%u%n", &o->shard, &o->shards,
			    &used) != 2 || optarg[used] != '\0' ||
			    o->shards < 1 || o->shards > 1000000 ||
			    o->shard >= o->shards) {
				fprintf(stderr, "%s: --shard: expected K/N, "
				    "0 <= K < N, got \"%s\"\n", argv[0],
				    optarg);
				return (2);
			}
			break;
		case 'M':
			if (strcmp(optarg, "on") != 0 &&
			    strcmp(optarg, "off") != 0) {
				fprintf(stderr, "%s: --mistake: expected on or "
				    "off, got \"%s\"\n", argv[0], optarg);
				return (2);
			}
			o->mistake = strcmp(optarg, "on") == 0;
			break;
		case 'S':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || v < 1 ||
			    v > 1000000) {
				fprintf(stderr, "%s: --sample: expected "
				    "1..1000000, got \"%s\"\n", argv[0],
				    optarg);
				return (2);
			}
			o->mode = "sample";
			o->samples = (int)v;
			break;
		case 'n':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || v < 1 || v > 256) {
				fprintf(stderr, "%s: --ncpu: expected 1..256, "
				    "got \"%s\"\n", argv[0], optarg);
				return (2);
			}
			o->ncpu = (int)v;
			break;
		case 'T':
			o->host_selftest = true;
			break;
		case 'h':
			usage(stdout, argv[0]);
			return (0);
		default:
			usage(stderr, argv[0]);
			return (2);
		}
	}
	if (o->kflag == 0)
		o->kflag = 2;
	/* --seed, --pct and --mistake go with --explore, or with
	 * --scenario NAME --seed S (an explored run replayed); --runs only
	 * with --explore. */
	if (optind != argc || o->kflag > 2 ||
	    (o->json != NULL && o->scenario == NULL && o->explore == NULL &&
	    !o->host_selftest) ||
	    (o->host_selftest && (o->scenario != NULL || o->explore != NULL ||
	    o->samples != 0 || o->svg != NULL || o->seed != 0 ||
	    o->schedule != NULL)) ||
	    (o->scenario != NULL && (o->samples != 0 || o->explore != NULL)) ||
	    (o->runs != 0 && o->explore == NULL) ||
	    ((o->pct != 0 || o->mistake >= 0) && o->explore == NULL &&
	    (o->scenario == NULL || (o->seed == 0 && o->schedule == NULL))) ||
	    (o->seed != 0 && o->explore == NULL && o->scenario == NULL) ||
	    (o->schedule != NULL && (o->scenario == NULL || o->seed != 0 ||
	    o->pct != 0)) ||
	    ((o->jobs != 0 || o->shards != 0) && (o->explore == NULL ||
	    o->seed != 0 || (o->jobs != 0 && o->shards != 0)))) {
		usage(stderr, argv[0]);
		return (2);
	}
	if (o->svg != NULL && o->scenario == NULL) {
		fprintf(stderr, "%s: --svg FILE draws a scenario's run: it "
		    "needs --scenario NAME\n", argv[0]);
		return (2);
	}
	/* Before the run, so that an unwritable FILE costs no run; not for
	 * a name that is no scenario (the mode says so, FILE untouched). */
	if (o->svg != NULL && (scn_find(o->scenario) != NULL ||
	    exp_find(o->scenario) != NULL) &&
	    (o->svg_fp = fopen(o->svg, "w")) == NULL) {
		fprintf(stderr, "%s: --svg %s: %s\n", argv[0], o->svg,
		    strerror(errno));
		return (2);
	}
	if (o->mistake < 0)
		o->mistake = 1;
	if (o->host_selftest)
		o->mode = "host-selftest";
	return (-1);
}

int
main(int argc, char **argv)
{
	struct demo_opts o;
	size_t i;
	int status;

	if ((status = parse_args(argc, argv, &o)) >= 0)
		return (status);
	for (i = 0; i < sizeof(demo_modes) / sizeof(demo_modes[0]); i++)
		if (strcmp(demo_modes[i].name, o.mode) == 0) {
			status = demo_modes[i].run(&o);
			return (status == 0 && show_failed ? 1 : status);
		}
	fprintf(stderr, "%s: unknown mode \"%s\"\n", argv[0], o.mode);
	return (2);
}

