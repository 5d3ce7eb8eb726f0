/*
 * stackcap-demo --explore NAME --jobs N: the explorer's search split in N
 * processes, each this program again (fork and exec) with --shard K/N,
 * and their results merged; --shard K/N alone is one part, for any batch
 * system (docs/check.md, "Campaigns beyond one process").  A part runs
 * the runs i of the search with i % N == K (sc_check()'s cc.shard), seed
 * 1 + i, and prints one line, "shard K/N: seed S runs R" (S 0: none
 * found); the search's seed is the smallest that a part found, the same
 * as one process's search finds.
 *
 * No kernel counterpart.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "demo.h"
#include "explore.h"

#define DEMO_SHARD_LINE	"shard %u/%u: seed %" SCNu64 " runs %d"

int
demo_explore_shard(const struct demo_opts *o, const struct exp_body *b,
    int runs)
{
	struct exp_found f;
	int error;

	error = exp_search_shard(b, 1, runs, o->pct, o->mistake != 0,
	    EXP_MASK(b->goal) | EXP_MASK(EXP_BROKEN), false, o->shard,
	    o->shards, &f);
	if (error != 0) {
		fprintf(stderr, "stackcap-demo: shard %u/%u: %s\n", o->shard,
		    o->shards, sc_errname(error));
		return (1);
	}
	printf("shard %u/%u: seed %" PRIu64 " runs %d\n", o->shard, o->shards,
	    f.seed, f.nrun);
	return (0);
}

/* Part k of the search: this program again, its stdout into *fd. */
static pid_t
demo_job_start(const struct demo_opts *o, const struct exp_body *b,
    int runs, unsigned k, int *fd)
{
	char sruns[16], spct[16], sshard[32];
	char *argv[16];
	int n = 0, p[2];
	pid_t pid;

	snprintf(sruns, sizeof(sruns), "%d", runs);
	snprintf(spct, sizeof(spct), "%d", o->pct);
	snprintf(sshard, sizeof(sshard), "%u/%u", k, (unsigned)o->jobs);
	argv[n++] = (char *)"stackcap-demo";
	argv[n++] = (char *)"--explore";
	argv[n++] = (char *)b->name;
	argv[n++] = (char *)"--runs";
	argv[n++] = sruns;
	if (o->pct > 0) {
		argv[n++] = (char *)"--pct";
		argv[n++] = spct;
	}
	if (exp_has_mistake(b)) {
		argv[n++] = (char *)"--mistake";
		argv[n++] = (char *)(o->mistake != 0 ? "on" : "off");
	}
	argv[n++] = (char *)"--shard";
	argv[n++] = sshard;
	argv[n] = NULL;
	if (pipe(p) != 0)
		return (-1);
	fflush(stdout);
	if ((pid = fork()) < 0) {
		close(p[0]);
		close(p[1]);
		return (-1);
	}
	if (pid == 0) {
		if (dup2(p[1], STDOUT_FILENO) < 0)
			_exit(127);
		close(p[0]);
		close(p[1]);
		execv("/proc/self/exe", argv);
		fprintf(stderr, "stackcap-demo: exec /proc/self/exe: %s\n",
		    strerror(errno));
		_exit(127);
	}
	close(p[1]);
	*fd = p[0];
	return (pid);
}

int
demo_explore_jobs(const struct demo_opts *o, const struct exp_body *b,
    int runs, struct exp_found *f)
{
	pid_t pid[DEMO_MAXJOBS];
	int fd[DEMO_MAXJOBS];
	char line[256];
	unsigned k, sk, sn;
	uint64_t seed;
	ssize_t len, got;
	int status, nrun, bad = 0, started;

	memset(f, 0, sizeof(*f));
	for (started = 0; started < o->jobs; started++)
		if ((pid[started] = demo_job_start(o, b, runs,
		    (unsigned)started, &fd[started])) < 0) {
			fprintf(stderr, "stackcap-demo: --jobs: cannot start "
			    "part %d: %s\n", started, strerror(errno));
			bad = 1;
			break;
		}
	/* Each part writes one short line at its end: a pipe holds it, so
	 * reading the parts one after another blocks none. */
	for (k = 0; k < (unsigned)started; k++) {
		for (len = 0; len < (ssize_t)sizeof(line) - 1; len += got)
			if ((got = read(fd[k], line + len, sizeof(line) - 1 -
			    (size_t)len)) <= 0)
				break;
		line[len] = '\0';
		close(fd[k]);
		if (waitpid(pid[k], &status, 0) != pid[k] ||
		    !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
		    sscanf(line, DEMO_SHARD_LINE, &sk, &sn, &seed,
		    &nrun) != 4 ||
		    sk != k || sn != (unsigned)o->jobs) {
			fprintf(stderr, "stackcap-demo: --jobs: part %u/%d "
			    "failed (status %#x): \"%s\"\n", k, o->jobs, status,
			    line);
			bad = 1;
			continue;
		}
		f->nrun += nrun;
		if (seed != 0 && (f->seed == 0 || seed < f->seed))
			f->seed = seed;
	}
	return (bad ? EIO : 0);
}
