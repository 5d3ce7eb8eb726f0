/*
 * struct sc_stack operations and symbolised printing.
 *
 * Kernel counterpart: sys/kern/subr_stack.c (stack_zero, stack_put,
 * stack_copy, stack_print, stack_sbuf_print).  Names come from libunwind,
 * which reads the ELF symbol table, so static functions get names too.
 */
#define UNW_LOCAL_ONLY
#include <errno.h>
#include <libunwind.h>
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

int
sc_symbolize(uintptr_t pc, char *name, size_t namelen, uintptr_t *offp)
{
	unw_context_t uc;
	unw_cursor_t cur;
	unw_word_t off = 0;
	int ret = -UNW_EUNSPEC;

	if (namelen == 0)
		return (EINVAL);
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
	if (pc != 0 && unw_getcontext(&uc) == 0 &&
	    unw_init_local2(&cur, &uc, UNW_INIT_SIGNAL_FRAME) == 0 &&
	    unw_set_reg(&cur, UNW_REG_IP, (unw_word_t)(pc - 1)) == 0)
		ret = unw_get_proc_name(&cur, name, namelen, &off);
	if (ret == -UNW_ENOMEM)
		name[namelen - 1] = '\0';	/* whatever the version did */
	else if (ret != 0) {
		strncpy(name, "??", namelen);
		name[namelen - 1] = '\0';
		if (offp != NULL)
			*offp = 0;
		return (ENOENT);
	}
	if (offp != NULL)
		*offp = (uintptr_t)off + 1;
	return (0);
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
