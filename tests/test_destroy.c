/*
 * sc_machine_destroy() against threads that never call into the scheduler:
 * it returns within its bound and leaves the process usable, whatever the
 * threads were doing.  Each test here is the regression test of a bug:
 * - a thread stopped while it held a host lock (the machine's list mutex,
 *   glibc's loader lock inside dl_iterate_phdr()) hung destroy or every
 *   later dlopen()/dl_iterate_phdr() of the process;
 * - the stop redirect wrote below the kernel stack of a thread with little
 *   stack left;
 * - under ASan, stacks reused from an earlier machine kept the poisoning
 *   of frames that never returned;
 * - destroy from a simulated thread of the machine, or in a fork()ed child.
 *
 * Kernel counterpart: the IPI_STOP of cpu_mp_stop()/cpustop_handler()
 * (sys/x86/x86/mp_x86.c), which stops CPUs wherever they are.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sc_test.h"
#include "sc_internal.h"	/* sc__curthread_kstack() */

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define TEST_ASAN 1
#endif
#endif

/* Set by a thread once it loops; `release` is never set: the spinners
 * spin until destroy stops them. */
static atomic_int looping, release;

static void
destroy_fn(void *arg)
{
	sc_machine_destroy(arg);
}

static void
noop_hook(void *arg, enum sc_hook_point point, struct sc_thread *td)
{
	(void)arg;
	(void)point;
	(void)td;
}

/* ------------------------------------------------------------------------
 * Host locks
 * ------------------------------------------------------------------------ */

/* Loops over the machine's lists, which take its list mutex. */
static void
list_looper(void *arg)
{
	struct sc_machine *m = arg;
	struct sc_proc *procs[8];
	struct sc_thread *tds[8];
	size_t n, nt, i;

	for (;;) {
		sc_machine_procs(m, procs, 8, &n);
		for (i = 0; i < n && i < 8; i++)
			sc_proc_threads(procs[i], tds, 8, &nt);
		atomic_store(&looping, 1);
	}
}

/*
 * A thread that loops in sc_machine_procs()/sc_proc_threads() was stopped
 * holding the list mutex, and destroy then blocked for ever when it
 * replaced the hook (5 of 5 runs with a hook set).
 */
static void
test_destroy_list_looper(void **state)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	struct sc_proc *p;
	struct sc_thread *td;
	int run, i;

	for (run = 0; run < 5; run++) {
		sc_machine_config_init(&cfg);
		cfg.ncpu = 2;
		cfg.hook = noop_hook;
		assert_int_equal(sc_machine_create(&cfg, &m), 0);
		/* Long lists: the looper spends most of its time in the
		 * library's code with the list mutex held. */
		for (i = 0; i < 256; i++)
			assert_int_equal(sc_proc_create(m, "lists", &p), 0);
		atomic_store(&looping, 0);
		assert_int_equal(sc_thread_create(p, "looper", list_looper, m,
		    &td), 0);
		SC_WAIT_FOR(atomic_load(&looping));
		sc_test_run_bounded(destroy_fn, m);
	}
}

static int
count_objects(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	(*(int *)arg)++;
	return (0);
}

static void
iterate_fn(void *arg)
{
	int n = 0;

	dl_iterate_phdr(count_objects, &n);
	*(int *)arg = n;
}

static void
text_looper(void *arg)
{
	(void)arg;
	for (;;) {
		(void)sc_text_refresh();
		atomic_store(&looping, 1);
	}
}

/*
 * A thread that loops in sc_text_refresh() was stopped inside
 * dl_iterate_phdr(), with glibc's loader lock taken: every later dlopen(),
 * dl_iterate_phdr() and sc_machine_create() of the process hung (9 of 10).
 */
static void
test_destroy_text_looper(void **state)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	struct sc_proc *p;
	struct sc_thread *td;
	int run, nobj;

	for (run = 0; run < 10; run++) {
		sc_machine_config_init(&cfg);
		cfg.ncpu = 2;
		assert_int_equal(sc_machine_create(&cfg, &m), 0);
		assert_int_equal(sc_proc_create(m, "text", &p), 0);
		atomic_store(&looping, 0);
		assert_int_equal(sc_thread_create(p, "looper", text_looper,
		    NULL, &td), 0);
		SC_WAIT_FOR(atomic_load(&looping));
		sc_test_run_bounded(destroy_fn, m);
		nobj = 0;
		sc_test_run_bounded(iterate_fn, &nobj);
		assert_true(nobj > 0);
	}
	/* The loader and the library still work. */
	m = sc_test_machine(1);
	sc_machine_destroy(m);
}

/* ------------------------------------------------------------------------
 * Stacks
 * ------------------------------------------------------------------------ */

/*
 * Spins with less than LOW_LEFT bytes of kernel stack left below it.
 * Under ASan the runtime's own calls (alloca poisoning) need more room
 * than that (the loader's lazy binding saves the whole xsave area), so
 * the thread keeps 8 KiB.
 */
#if defined(TEST_ASAN)
#define LOW_LEFT	8192
#else
#define LOW_LEFT	256
#endif

SC_NOIPA static void
low_spinner(void *arg)
{
	struct sc_range r;
	volatile char *fill;
	uintptr_t here;

	(void)arg;
	if (!sc__curthread_kstack(&r))
		return;
	here = (uintptr_t)__builtin_frame_address(0);
	fill = __builtin_alloca(here - r.lo - LOW_LEFT);
	fill[0] = 1;
	atomic_store(&looping, 1);
	while (!atomic_load(&release))
		__builtin_ia32_pause();
	SC_BARRIER();
}

/*
 * The stop redirect put sc__cpu_stop()'s frames 256 bytes below the
 * interrupted %rsp: below the kernel stack, into its guard page, when the
 * thread had less than about 350 bytes left (SIGSEGV).
 */
static void
test_destroy_low_stack(void **state)
{
	struct sc_machine *m;
	struct sc_proc *p;
	struct sc_thread *td;
	int run;

	for (run = 0; run < 3; run++) {
		m = sc_test_machine(1);
		assert_int_equal(sc_proc_create(m, "low", &p), 0);
		atomic_store(&looping, 0);
		assert_int_equal(sc_thread_create(p, "low", low_spinner, NULL,
		    &td), 0);
		SC_WAIT_FOR(atomic_load(&looping));
		sc_test_run_bounded(destroy_fn, m);
	}
}

struct ucheck {
	atomic_int	poisoned;	/* a stale poisoned byte was seen */
	int		depth;
};

#if defined(TEST_ASAN)
/* Is any byte of the user stack below this frame still poisoned? */
SC_NOIPA static int
ustack_poisoned_below(void)
{
	char here;
	uintptr_t sp = (uintptr_t)&here, lo = sp - 16 * 1024;

	return (__asan_region_is_poisoned((void *)lo, sp - 256 - lo) != NULL);
}
#else
static int
ustack_poisoned_below(void)
{
	return (0);
}
#endif

/* In user mode: recurse (leaving poisoned redzones), then spin. */
SC_NOIPA static void
user_recurse_spin(struct ucheck *u, int depth)
{
	volatile char pad[256];

	pad[0] = (char)depth;
	if (depth > 0) {
		user_recurse_spin(u, depth - 1);
		SC_BARRIER();
		return;
	}
	atomic_store(&looping, 1);
	while (!atomic_load(&release))
		__builtin_ia32_pause();
	(void)pad[0];
}

static void
user_body(void *arg)
{
	struct ucheck *u = arg;

	if (ustack_poisoned_below())
		atomic_store(&u->poisoned, 1);
	user_recurse_spin(u, u->depth);
}

static void
user_spinner(void *arg)
{
	sc_user_call(user_body, arg);
	SC_BARRIER();
}

/*
 * Under ASan, the second machine of a create/destroy loop with a thread
 * spinning in sc_user_call() failed with a stack-buffer-underflow (10 of
 * 10): the stacks of the first were unmapped with the poisoning of frames
 * that never returned, and came back at the same address.  Each machine's
 * thread checks, on arrival in user mode, that its user stack below it
 * is clean.  In other builds the loop still checks that destroy stops a
 * thread in user mode.
 */
static void
test_destroy_reused_stacks(void **state)
{
	struct sc_machine *m;
	struct sc_proc *p;
	struct sc_thread *td;
	struct ucheck u;
	int run;

	for (run = 0; run < 10; run++) {
		m = sc_test_machine(1 + run % 2);
		assert_int_equal(sc_proc_create(m, "user", &p), 0);
		memset(&u, 0, sizeof(u));
		u.depth = run % 3;
		atomic_store(&looping, 0);
		assert_int_equal(sc_thread_create(p, "user", user_spinner, &u,
		    &td), 0);
		SC_WAIT_FOR(atomic_load(&looping));
		assert_int_equal(atomic_load(&u.poisoned), 0);
		sc_test_run_bounded(destroy_fn, m);
	}
}

/* ------------------------------------------------------------------------
 * Who may destroy
 * ------------------------------------------------------------------------ */

static void
self_destroyer(void *arg)
{
	sc_machine_destroy(arg);
	atomic_store(&looping, 2);	/* never: the thread is parked */
}

/* A simulated thread that destroys its own machine: KASSERT, parked. */
static void
test_destroy_from_own_thread(void **state)
{
	struct sc_thread *td;

	sc_set_panic_handler(sc_test_panic_record);
	atomic_store(&looping, 0);
	td = sc_test_spawn("destroyer", self_destroyer, tm);
	SC_WAIT_FOR(sc_test_panic_count() == 1);
	assert_non_null(strstr(sc_test_panic_msg(), "its own machine"));
	SC_WAIT_STATE(td, SC_TDS_INHIBITED, SC_TDI_SUSPENDED);
	assert_int_equal(atomic_load(&looping), 0);
}

static struct hold fork_hold;

/*
 * In a fork()ed child the CPU pthreads do not exist: a capture of a
 * running thread and destroy fail with a KASSERT that names fork(), and
 * return (EINVAL; destroy leaks), instead of signalling the parent's
 * pthreads or hanging.
 */
static void
test_destroy_after_fork(void **state)
{
	struct sc_thread *td;
	struct sc_stack st;
	int status, error;
	pid_t pid;

	memset(&fork_hold, 0, sizeof(fork_hold));
	td = sc_test_spawn("holder", hold_cpu, &fork_hold);
	SC_WAIT_FOR(atomic_load(&fork_hold.holding));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		sc_set_panic_handler(sc_test_panic_record);
		sc_test_panic_reset();
		sc_proc_lock(tp);
		sc_thread_lock(td);
		error = sc_stack_save_td(&st, td);
		sc_thread_unlock(td);
		sc_proc_unlock(tp);
		if (error != EINVAL || sc_test_panic_count() != 1 ||
		    strstr(sc_test_panic_msg(), "fork()") == NULL)
			_exit(1);
		sc_machine_destroy(tm);
		if (sc_test_panic_count() != 2 ||
		    strstr(sc_test_panic_msg(), "fork()") == NULL)
			_exit(2);
		_exit(0);
	}
	SC_WAIT_FOR(waitpid(pid, &status, WNOHANG) == pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	atomic_store(&fork_hold.release, 1);
	assert_int_equal(sc_thread_join(td), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_destroy_list_looper),
		cmocka_unit_test(test_destroy_text_looper),
		cmocka_unit_test(test_destroy_low_stack),
		cmocka_unit_test(test_destroy_reused_stacks),
		cmocka_unit_test_setup_teardown(test_destroy_from_own_thread,
		    sc_test_setup_2cpu, sc_test_teardown),
		cmocka_unit_test_setup_teardown(test_destroy_after_fork,
		    sc_test_setup_2cpu, sc_test_teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
