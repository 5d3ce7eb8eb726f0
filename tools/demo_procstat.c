/*
 * stackcap-demo's printer: a machine's threads the way procstat -kk -a
 * prints them (usr.bin/procstat/procstat_kstack.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "demo.h"

/*
 * What kern.proc.kstack hands procstat: stack_sbuf_print()'s text, one
 * "#N 0x... at func+0x1c" line per frame ("??+0" when no symbol covers the
 * pc).  With --kernel-limits, the kernel's limits apply: STACK_MAX (18)
 * frames, and a KKST_MAXLEN (1024) byte buffer that cuts the text (the
 * sysctl's fixed-length sbuf).
 */
#define DEMO_STACK_MAX	18		/* sys/sys/stack.h */
#define DEMO_KKST_MAXLEN 1024		/* sys/sys/user.h */

static void
kstack_text(const struct sc_stack *st, bool limits, char *buf, size_t len)
{
	char name[256];
	uintptr_t off;
	size_t used = 0, cap = limits && len > DEMO_KKST_MAXLEN ?
	    DEMO_KKST_MAXLEN : len;
	int i, depth = st->depth, n;

	if (limits && depth > DEMO_STACK_MAX)
		depth = DEMO_STACK_MAX;
	buf[0] = '\0';
	for (i = 0; i < depth && used + 1 < cap; i++) {
		if (sc_symbolize(st->pcs[i], name, sizeof(name), &off) != 0) {
			snprintf(name, sizeof(name), "??");
			off = 0;
		}
		n = snprintf(buf + used, cap - used, "#%d %p at %s+%#lx\n", i,
		    (void *)st->pcs[i], name, (unsigned long)off);
		if (n < 0)
			break;
		used += (size_t)n < cap - used ? (size_t)n : cap - used - 1;
	}
}

/*
 * procstat_kstack.c's reduction of that text: the words of each line are
 * frame number, pc, "at", function and offset, split at ' ', '\n' and
 * '+'; keep the function (and "+offset" for -kk), a blank after each
 * frame.  A line cut by KKST_MAXLEN comes out cut, as in procstat.
 */
static void
kstack_reduce(const char *text, int kflag, char *out)
{
	enum { W_NUM, W_PC, W_AT, W_FUNC, W_OFF } w = W_NUM;
	const char *c;

	for (c = text; *c != '\0'; c++) {
		if (*c == ' ' || *c == '\n' || *c == '+') {
			if (w == W_FUNC && kflag > 1)
				*out++ = '+';
			if (w == W_OFF)
				*out++ = ' ';
			w = w == W_OFF ? W_NUM : w + 1;
			continue;
		}
		if (w == W_FUNC || (w == W_OFF && kflag > 1))
			*out++ = *c;
	}
	*out = '\0';
}

/*
 * procstat's header: "%5s %6s %-19s %-19s %-29s", and the same widths on
 * each line (usr.bin/procstat/procstat_kstack.c, FreeBSD 12 to main).
 */
static void
kstack_header(void)
{
	printf("%5s %6s %-19s %-19s %-29s\n", "PID", "TID", "COMM", "TDNAME",
	    "KSTACK");
}

static void
kstack_line(const struct demo_opts *o, const struct sc_proc *p,
    const struct sc_kstack *kk)
{
	char text[SC_STACK_MAX * 300], trace[sizeof(text)];
	const char *comm = sc_proc_comm(p);

	/* TDNAME is "-" when empty or the same as the command. */
	printf("%5d %6d %-19s %-19s ", sc_proc_pid(p), kk->tid, comm,
	    kk->tdname[0] != '\0' && strcmp(kk->tdname, comm) != 0 ?
	    kk->tdname : "-");
	switch (kk->state) {
	case SC_KKST_STATE_RUNNING:
		printf("%-29s\n", "<running>");
		return;
	case SC_KKST_STATE_SWAPPED:
		printf("%-29s\n", "<swapped>");
		return;
	case SC_KKST_STATE_STACKOK:
		break;
	default:
		printf("%-29s\n", "<unknown>");
		return;
	}
	kstack_text(&kk->stack, o->kernel_limits, text, sizeof(text));
	kstack_reduce(text, o->kflag, trace);
	printf("%-29s\n", trace);
}

/*
 * procstat -kk -a: every thread of every process of m (the idle process
 * too), by pid then tid, from one sc_machine_snapshot(): every running
 * thread's CPU is interrupted in the same round.
 */
void
demo_kstack_all(const struct demo_opts *o, struct sc_machine *m)
{
	static struct sc_kstack kk[DEMO_MAX_THREADS];
	struct sc_proc *procs[DEMO_MAX_PROCS + 1];
	size_t i, j, n, np;
	int error;

	sc_machine_procs(m, procs, DEMO_MAX_PROCS + 1, &np);
	if (np > DEMO_MAX_PROCS + 1)
		np = DEMO_MAX_PROCS + 1;
	error = sc_machine_snapshot(m, kk, DEMO_MAX_THREADS, &n);
	if (error == ETIMEDOUT)		/* the rest is listed */
		fprintf(stderr, "stackcap-demo: a proc lock stayed held past "
		    "capture_timeout_ns: its process is left out\n");
	else if (error != 0) {
		fprintf(stderr, "stackcap-demo: sc_machine_snapshot: %s\n",
		    strerror(error));
		return;
	}
	if (n > DEMO_MAX_THREADS)
		n = DEMO_MAX_THREADS;
	kstack_header();
	for (i = 0, j = 0; i < n; i++) {
		/* Both lists are in pid order. */
		while (j < np && sc_proc_pid(procs[j]) != kk[i].pid)
			j++;
		if (j == np)
			break;
		kstack_line(o, procs[j], &kk[i]);
	}
}
