/*
 * struct sc_stack operations and symbolised printing.
 *
 * Kernel counterpart: sys/kern/subr_stack.c (stack_zero, stack_put,
 * stack_copy, stack_print, stack_sbuf_print).  Names come from libunwind,
 * which reads the ELF symbol table, so static functions get names too.
 */
#define UNW_LOCAL_ONLY
#include <errno.h>
#include <link.h>
#include <libunwind.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sc_internal.h"

void
sc_stack_zero(struct sc_stack *st)
{
	st->depth = 0;
}

int
sc_stack_put(struct sc_stack *st, uintptr_t pc)
{
	if (st->depth < 0 || st->depth >= SC_STACK_MAX)
		return (-1);
	st->pcs[st->depth++] = pc;
	return (0);
}

void
sc_stack_copy(const struct sc_stack *src, struct sc_stack *dst)
{
	int i, depth;

	depth = src->depth;
	if (depth < 0)
		depth = 0;
	if (depth > SC_STACK_MAX)
		depth = SC_STACK_MAX;
	for (i = 0; i < depth; i++)
		dst->pcs[i] = src->pcs[i];
	dst->depth = depth;
}

/* The lookup itself: 0, -UNW_ENOMEM (a truncated name), or another
 * negative libunwind error. */
static int
sc_sym_lookup(uintptr_t pc, char *name, size_t namelen, unw_word_t *off)
{
	unw_context_t uc;
	unw_cursor_t cur;

	/*
	 * libunwind 1.6 has no lookup by address alone: point a local cursor
	 * at pc and ask for the procedure name.  pc is a return address, so
	 * look up pc - 1: a call that ends a function returns past its end.
	 * UNW_INIT_SIGNAL_FRAME makes libunwind take that IP as it is:
	 * unw_init_local() would subtract 1 again and add it back to the
	 * offset only on success, not on -UNW_ENOMEM.
	 * -UNW_ENOMEM means that a symbol covers pc but its name did not fit:
	 * libunwind has filled name with a truncated copy and set the offset,
	 * so that is a name too (as snprintf() truncates).
	 */
	*off = 0;
	if (pc == 0 || unw_getcontext(&uc) != 0 ||
	    unw_init_local2(&cur, &uc, UNW_INIT_SIGNAL_FRAME) != 0 ||
	    unw_set_reg(&cur, UNW_REG_IP, (unw_word_t)(pc - 1)) != 0)
		return (-UNW_EUNSPEC);
	return (unw_get_proc_name(&cur, name, namelen, off));
}

/*
 * A cache of lookups.  libunwind's unw_get_proc_name() reads
 * /proc/self/maps and maps the object's ELF file again at every call:
 * 70% of the time of a DFS search over a body that checks its captures
 * by name (docs/check.md, "Measured (2026-12-07)").  Keyed by pc, direct
 * mapped; emptied when an object was loaded or unloaded since (glibc's
 * dlpi_adds and dlpi_subs), as the same address may then name another
 * function.  sc_sym_mtx is only tried: a caller that finds it held (or a
 * child of fork() whose parent held it) looks up without the cache.
 */
#define SC_SYM_SLOTS	1024
#define SC_SYM_NAME	128

struct sc_sym_ent {
	uintptr_t	se_pc;		/* 0: empty */
	uintptr_t	se_off;
	int		se_ret;		/* 0, or ENOENT */
	char		se_name[SC_SYM_NAME];
};

/* (s) sc_sym_mtx */
static pthread_mutex_t sc_sym_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct sc_sym_ent *sc_sym_tab;	/* (s) */
static unsigned long long sc_sym_gen;	/* (s) adds + subs when filled */

static int
sc_sym_gen_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(unsigned long long *)arg = info->dlpi_adds + info->dlpi_subs;
	return (1);	/* the counters are the same in every entry */
}

/* The entry for pc, the cache emptied first if objects changed; NULL
 * without memory.  sc_sym_mtx held. */
static struct sc_sym_ent *
sc_sym_slot(uintptr_t pc)
{
	unsigned long long gen = 0;

	if (sc_sym_tab == NULL &&
	    (sc_sym_tab = calloc(SC_SYM_SLOTS, sizeof(*sc_sym_tab))) == NULL)
		return (NULL);
	(void)dl_iterate_phdr(sc_sym_gen_cb, &gen);
	if (gen != sc_sym_gen) {
		memset(sc_sym_tab, 0, SC_SYM_SLOTS * sizeof(*sc_sym_tab));
		sc_sym_gen = gen;
	}
	return (&sc_sym_tab[(pc >> 2 ^ pc >> 12) % SC_SYM_SLOTS]);
}

/* A name into the caller's buffer, as much as fits, NUL-terminated. */
static void
sc_sym_copy(char *name, size_t namelen, const char *from)
{
	size_t n = strlen(from);

	if (n >= namelen)
		n = namelen - 1;
	memcpy(name, from, n);
	name[n] = '\0';
}

int
sc_symbolize(uintptr_t pc, char *name, size_t namelen, uintptr_t *offp)
{
	struct sc_sym_ent *e = NULL;
	char full[SC_SYM_NAME];
	unw_word_t off = 0;
	int ret;

	if (namelen == 0)
		return (EINVAL);
	if (pthread_mutex_trylock(&sc_sym_mtx) == 0) {
		e = sc_sym_slot(pc);
		if (e != NULL && e->se_pc == pc && pc != 0) {
			ret = e->se_ret;
			off = e->se_off;
			sc_sym_copy(name, namelen, e->se_name);
			pthread_mutex_unlock(&sc_sym_mtx);
			goto out;
		}
		ret = sc_sym_lookup(pc, full, sizeof(full), &off);
		if (ret != -UNW_ENOMEM) {
			/* Whole, or no symbol: kept.  Longer than full: not. */
			if (ret != 0)
				strcpy(full, "??");
			ret = ret == 0 ? 0 : ENOENT;
			if (e != NULL && pc != 0) {
				e->se_pc = pc;
				e->se_off = off;
				e->se_ret = ret;
				memcpy(e->se_name, full, sizeof(full));
			}
			sc_sym_copy(name, namelen, full);
			pthread_mutex_unlock(&sc_sym_mtx);
			goto out;
		}
		pthread_mutex_unlock(&sc_sym_mtx);
	}
	ret = sc_sym_lookup(pc, name, namelen, &off);
	if (ret == -UNW_ENOMEM) {
		name[namelen - 1] = '\0';	/* whatever the version did */
		ret = 0;
	} else if (ret != 0) {
		sc_sym_copy(name, namelen, "??");
		ret = ENOENT;
	}
out:
	if (offp != NULL)
		*offp = ret == 0 ? (uintptr_t)off + 1 : 0;
	return (ret);
}

void
sc_stack_print(FILE *fp, const struct sc_stack *st)
{
	char name[256];
	uintptr_t off;
	int i;

	for (i = 0; i < st->depth && i < SC_STACK_MAX; i++) {
		if (sc_symbolize(st->pcs[i], name, sizeof(name), &off) == 0)
			fprintf(fp, "#%d %p at %s+%#lx\n", i,
			    (void *)st->pcs[i], name, (unsigned long)off);
		else
			fprintf(fp, "#%d %p at ??\n", i, (void *)st->pcs[i]);
	}
}

size_t
sc_stack_format_kk(const struct sc_stack *st, char *buf, size_t len)
{
	char name[256], frame[300];
	uintptr_t off;
	size_t need, n;
	int i;

	if (len > 0)
		buf[0] = '\0';
	for (need = 0, i = 0; i < st->depth && i < SC_STACK_MAX; i++) {
		if (sc_symbolize(st->pcs[i], name, sizeof(name), &off) == 0)
			n = (size_t)snprintf(frame, sizeof(frame), "%s%s+%#lx",
			    i ? " " : "", name, (unsigned long)off);
		else
			n = (size_t)snprintf(frame, sizeof(frame), "%s??",
			    i ? " " : "");
		if (n >= sizeof(frame))
			n = sizeof(frame) - 1;
		if (need + n < len)
			memcpy(buf + need, frame, n + 1);
		else if (need < len) {
			memcpy(buf + need, frame, len - need - 1);
			buf[len - 1] = '\0';
		}
		need += n;
	}
	return (need);
}
