/* Sampling into collapsed stacks (see sample.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sample.h"

#define SMP_MAXPROCS	256
#define SMP_MAXTHREADS	1024
#define SMP_LINE	(SC_STACK_MAX * 64 + 64)

struct smp_entry {
	char		*key;		/* "comm;root;...;leaf" */
	unsigned long	count;
};

struct smp_table {
	struct smp_entry *e;
	size_t		n, cap;
};

static int
smp_add(struct smp_table *t, const char *key)
{
	struct smp_entry *ne;
	size_t i;

	for (i = 0; i < t->n; i++) {
		if (strcmp(t->e[i].key, key) == 0) {
			t->e[i].count++;
			return (0);
		}
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		ne = realloc(t->e, t->cap * sizeof(*ne));
		if (ne == NULL)
			return (ENOMEM);
		t->e = ne;
	}
	if ((t->e[t->n].key = strdup(key)) == NULL)
		return (ENOMEM);
	t->e[t->n++].count = 1;
	return (0);
}

/* "comm;root;...;leaf": function names only, outermost first. */
static void
smp_key(const char *comm, const struct sc_kstack *kk, char *buf, size_t len)
{
	char name[256];
	size_t off;
	int i;

	off = (size_t)snprintf(buf, len, "%s", comm);
	if (kk->state == SC_KKST_STATE_SWAPPED)
		snprintf(buf + off, len - off, ";<swapped>");
	else if (kk->state == SC_KKST_STATE_RUNNING)
		snprintf(buf + off, len - off, ";<running>");
	for (i = kk->stack.depth - 1; i >= 0 && off < len; i--) {
		if (kk->state != SC_KKST_STATE_STACKOK)
			break;
		sc_symbolize(kk->stack.pcs[i], name, sizeof(name), NULL);
		off += (size_t)snprintf(buf + off, len - off, ";%s", name);
	}
}

static int
smp_cmp(const void *a, const void *b)
{
	const struct smp_entry *ea = a, *eb = b;

	if (ea->count != eb->count)
		return (ea->count < eb->count ? 1 : -1);
	return (strcmp(ea->key, eb->key));
}

int
smp_collapsed(struct sc_machine *m, int rounds, FILE *out)
{
	struct sc_proc *procs[SMP_MAXPROCS];
	struct sc_kstack *kk;
	struct smp_table t = { 0 };
	char line[SMP_LINE];
	size_t np, nt, i, j;
	int r, error = 0;

	if ((kk = calloc(SMP_MAXTHREADS, sizeof(*kk))) == NULL)
		return (ENOMEM);
	sc_machine_procs(m, procs, SMP_MAXPROCS, &np);
	if (np > SMP_MAXPROCS)
		np = SMP_MAXPROCS;
	for (r = 0; r < rounds && error == 0; r++) {
		for (i = 0; i < np && error == 0; i++) {
			sc_proc_kstack(procs[i], kk, SMP_MAXTHREADS, &nt);
			if (nt > SMP_MAXTHREADS)
				nt = SMP_MAXTHREADS;
			for (j = 0; j < nt && error == 0; j++) {
				smp_key(sc_proc_comm(procs[i]), &kk[j], line,
				    sizeof(line));
				error = smp_add(&t, line);
			}
		}
	}
	qsort(t.e, t.n, sizeof(t.e[0]), smp_cmp);
	for (i = 0; i < t.n; i++) {
		if (error == 0)
			fprintf(out, "%s %lu\n", t.e[i].key, t.e[i].count);
		free(t.e[i].key);
	}
	free(t.e);
	free(kk);
	if (error == 0 && ferror(out))
		error = EIO;
	return (error);
}
