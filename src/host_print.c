/*
 * The outputs of <stackcap/host.h>: the `procstat -kk` listing, folded
 * stacks for flame graphs, JSON, and sc_host_dump().
 *
 * Kernel counterpart: procstat's kstack printing (usr.bin/procstat/
 * procstat_kstack.c) over kern.proc.kstack; the frames are symbolised with
 * sc_symbolize() (subr_stack.c), as sc_stack_format_kk() does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_var.h"

static void
sc_host_comm(char *comm, size_t len)
{
	FILE *fp;

	snprintf(comm, len, "?");
	if ((fp = fopen("/proc/self/comm", "r")) == NULL)
		return;
	if (fgets(comm, (int)len, fp) != NULL)
		comm[strcspn(comm, "\n")] = '\0';
	fclose(fp);
}

static bool
sc_host_has_stack(const struct sc_host_thread *t)
{
	return ((t->verdict == SC_HOST_OK || t->verdict == SC_HOST_SELF) &&
	    t->stack.depth > 0);
}

static bool
sc_host_frame_unwound(const struct sc_host_thread *t, int i)
{
	return ((t->unwound >> i & 1) != 0);
}

void
sc_host_print(FILE *fp, const struct sc_host_thread *t, size_t n)
{
	char comm[32], name[256];
	uintptr_t off;
	size_t k;
	int i;

	sc_host_comm(comm, sizeof(comm));
	fprintf(fp, "%5s %6s %-16s %-16s %s\n", "PID", "TID", "COMM",
	    "TDNAME", "KSTACK");
	for (k = 0; k < n; k++) {
		fprintf(fp, "%5d %6d %-16s %-16s", (int)getpid(),
		    (int)t[k].tid, comm, t[k].name);
		if (!sc_host_has_stack(&t[k])) {
			fprintf(fp, " <%s>\n",
			    sc_host_verdict_name(t[k].verdict));
			continue;
		}
		if (t[k].verdict == SC_HOST_SELF)
			fprintf(fp, " <self>");
		for (i = 0; i < t[k].stack.depth && i < SC_STACK_MAX; i++) {
			if (sc_symbolize(t[k].stack.pcs[i], name, sizeof(name),
			    &off) == 0)
				fprintf(fp, " %s+%#lx", name,
				    (unsigned long)off);
			else
				fprintf(fp, " %#lx",
				    (unsigned long)t[k].stack.pcs[i]);
			if (sc_host_frame_unwound(&t[k], i))
				fputc('*', fp);
		}
		fputc('\n', fp);
	}
}

void
sc_host_print_folded(FILE *fp, const struct sc_host_thread *t, size_t n)
{
	char comm[32], name[256];
	size_t k;
	int i;

	sc_host_comm(comm, sizeof(comm));
	for (k = 0; k < n; k++) {
		if (!sc_host_has_stack(&t[k]))
			continue;
		fprintf(fp, "%s;%s", comm, t[k].name);
		for (i = t[k].stack.depth - 1; i >= 0; i--) {
			if (sc_symbolize(t[k].stack.pcs[i], name, sizeof(name),
			    NULL) != 0)
				snprintf(name, sizeof(name), "%#lx",
				    (unsigned long)t[k].stack.pcs[i]);
			fprintf(fp, ";%s", name);
		}
		fprintf(fp, " 1\n");
	}
}

void
sc_host_print_json(FILE *fp, const struct sc_host_thread *t, size_t n)
{
	char name[256];
	uintptr_t off;
	size_t k;
	int i;

	fprintf(fp, "{\"pid\": %d, \"threads\": [", (int)getpid());
	for (k = 0; k < n; k++) {
		fprintf(fp, "%s\n  {\"tid\": %d, \"name\": ", k ? "," : "",
		    (int)t[k].tid);
		sc__json_string(fp, t[k].name);
		fprintf(fp, ", \"verdict\": \"%s\", \"frames\": [",
		    sc_host_verdict_name(t[k].verdict));
		for (i = 0; sc_host_has_stack(&t[k]) && i < t[k].stack.depth;
		    i++) {
			if (sc_symbolize(t[k].stack.pcs[i], name, sizeof(name),
			    &off) != 0)
				off = 0;
			fprintf(fp, "%s{\"pc\": \"%#lx\", \"func\": ",
			    i ? ", " : "", (unsigned long)t[k].stack.pcs[i]);
			sc__json_string(fp, name);
			fprintf(fp, ", \"off\": %lu, \"walker\": \"%s\"}",
			    (unsigned long)off,
			    sc_host_frame_unwound(&t[k], i) ? "unwind" : "fp");
		}
		fprintf(fp, "]}");
	}
	fprintf(fp, "\n]}\n");
}

#define SC_HOST_DUMP_MAX 4096

int
sc_host_dump(FILE *fp, const char *what, long timeout_ns)
{
	struct sc_host_thread *t;
	size_t n = 0;
	int error;

	if ((t = calloc(SC_HOST_DUMP_MAX, sizeof(*t))) == NULL)
		return (ENOMEM);
	error = sc_host_snapshot(t, SC_HOST_DUMP_MAX, &n, timeout_ns);
	if (what != NULL)
		fprintf(fp, "stackcap: %s\n", what);
	if (error == 0 || error == ENOSPC) {
		sc_host_print(fp, t, n < SC_HOST_DUMP_MAX ? n :
		    SC_HOST_DUMP_MAX);
		if (n > SC_HOST_DUMP_MAX)
			fprintf(fp, "stackcap: %zu more threads not shown\n",
			    n - SC_HOST_DUMP_MAX);
	} else
		fprintf(fp, "stackcap: sc_host_snapshot: %s\n",
		    strerror(error));
	fflush(fp);
	free(t);
	return (error == ENOSPC ? 0 : error);
}
