/*
 * Oracle: on a stack built with frame pointers, the walker (sc_stack_save)
 * agrees with libunwind (unw_backtrace, which follows DWARF CFI instead).
 *
 * A known chain chain_a -> chain_b -> chain_c captures at its bottom, with
 * both, from the same function.  The chain is run twice: once from main()
 * itself, before CMocka starts (so the comparison reaches main and main's
 * caller in libc), and once from inside a CMocka test.  The functions are
 * noipa (noinline under clang) and each call is followed by a compiler
 * barrier, so none is inlined, cloned or tail-called.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "stackcap/cmocka.h"
#include "stackcap.h"
#include "stackcap/testing.h"

#define UNW_MAX	128

struct capture {
	struct sc_stack	st;
	void		*unw[UNW_MAX];
	int		nunw;
	int		done;
};

static struct capture from_main;

/* Non-static, so exported names and static ones are both exercised. */
void	chain_a(struct capture *c);

SC_NOIPA static void
chain_c(struct capture *c)
{
	sc_stack_save(&c->st);
	__asm__ volatile("" ::: "memory");
	c->nunw = unw_backtrace(c->unw, UNW_MAX);
	__asm__ volatile("" ::: "memory");
	c->done = 1;
}

SC_NOIPA static void
chain_b(struct capture *c)
{
	chain_c(c);
	__asm__ volatile("" ::: "memory");
}

SC_NOIPA void
chain_a(struct capture *c)
{
	chain_b(c);
	__asm__ volatile("" ::: "memory");
}

static void
dump(const struct capture *c)
{
	char name[128];
	uintptr_t off;
	int i;

	print_message("sc_stack_save: depth %d\n", c->st.depth);
	sc_stack_print(stderr, &c->st);
	print_message("unw_backtrace: %d\n", c->nunw);
	for (i = 0; i < c->nunw; i++) {
		sc_symbolize((uintptr_t)c->unw[i] + 1, name, sizeof(name),
		    &off);
		print_message("#%d %p at %s\n", i, c->unw[i], name);
	}
}

/*
 * Align the two traces at their first common address.  sc_stack_save's
 * first entry is the return address into chain_c from sc_stack_save;
 * unw_backtrace's first entries are inside unw_backtrace and the return
 * address into chain_c from unw_backtrace: different call sites.  So the
 * first common address must be our second entry (the return into chain_b).
 * Returns its index in c->unw.
 */
static int
align(const struct capture *c)
{
	char name[128];
	int j;

	assert_true(c->st.depth >= 2);
	for (j = 0; j < c->nunw; j++)
		if ((uintptr_t)c->unw[j] == c->st.pcs[1])
			break;
	if (j == c->nunw) {
		dump(c);
		fail_msg("no common address between the two traces");
	}
	/* Just before it, libunwind has its own return into chain_c. */
	assert_true(j >= 1);
	assert_true((uintptr_t)c->unw[j - 1] != c->st.pcs[0]);
	assert_int_equal(sc_symbolize((uintptr_t)c->unw[j - 1], name,
	    sizeof(name), NULL), 0);
	assert_string_equal(name, "chain_c");
	return (j);
}

/* Frames 0..n of ours must be chain_c, chain_b, chain_a, then names[]. */
static void
check_names(const struct sc_stack *st, const char *const *names, int n)
{
	char name[128];
	uintptr_t off;
	int i;

	assert_true(st->depth >= n);
	for (i = 0; i < n; i++) {
		assert_int_equal(sc_symbolize(st->pcs[i], name, sizeof(name),
		    &off), 0);
		assert_string_equal(name, names[i]);
		assert_true(off > 0);
	}
}

static void
check_kk_order(const struct sc_stack *st)
{
	char buf[4096];
	const char *c, *b, *a;

	sc_stack_format_kk(st, buf, sizeof(buf));
	c = strstr(buf, "chain_c+0x");
	assert_non_null(c);
	b = strstr(c, "chain_b+0x");
	assert_non_null(b);
	a = strstr(b, "chain_a+0x");
	assert_non_null(a);
	/* The innermost frame comes first. */
	assert_ptr_equal(c, buf);
}

static void
test_oracle_from_main(void **state)
{
	static const char *const names[] = {
		"chain_c", "chain_b", "chain_a", "main",
	};
	const struct capture *c = &from_main;
	int i, j;

	assert_true(c->done);
	j = align(c);
	/*
	 * Our frames 1..4 (returns into chain_b, chain_a, main and main's
	 * caller in libc) are libunwind's j..j+3, in the same order.  main's
	 * caller is the last one both must have: glibc has no frame pointers,
	 * so past main's own frame record the walker has nothing reliable.
	 */
	if (c->st.depth < 5 || j + 4 > c->nunw)
		dump(c);
	assert_true(c->st.depth >= 5);
	assert_true(j + 4 <= c->nunw);
	for (i = 1; i <= 4; i++) {
		if (c->st.pcs[i] != (uintptr_t)c->unw[j + i - 1])
			dump(c);
		assert_int_equal(c->st.pcs[i], (uintptr_t)c->unw[j + i - 1]);
	}
	check_names(&c->st, names, 4);
	check_kk_order(&c->st);
}

SC_NOIPA static void
test_oracle_in_test(void **state)
{
	static const char *const names[] = {
		"chain_c", "chain_b", "chain_a", "test_oracle_in_test",
	};
	struct capture c;
	int i, j;

	memset(&c, 0, sizeof(c));
	chain_a(&c);
	__asm__ volatile("" ::: "memory");
	assert_true(c.done);
	j = align(&c);
	/*
	 * Returns into chain_b, chain_a and this test function.  CMocka's
	 * own frames (no frame pointers in the distribution's build) are
	 * not compared.
	 */
	assert_true(c.st.depth >= 4);
	assert_true(j + 3 <= c.nunw);
	for (i = 1; i <= 3; i++)
		assert_int_equal(c.st.pcs[i], (uintptr_t)c.unw[j + i - 1]);
	check_names(&c.st, names, 4);
	check_kk_order(&c.st);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oracle_from_main),
		cmocka_unit_test(test_oracle_in_test),
	};

	/* Captured here, so that main and its caller are on the stack. */
	chain_a(&from_main);
	__asm__ volatile("" ::: "memory");
	return (cmocka_run_group_tests(tests, NULL, NULL));
}
