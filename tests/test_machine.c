/*
 * sc_machine_create() and friends on bad input: every bad configuration or
 * argument gets a clear error, the IPI signal is taken only when nobody
 * else handles it, and its disposition comes back at destroy.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sc_test.h"
#include "stackcap.h"

static void
expect_config_einval(void (*bad)(struct sc_machine_config *))
{
	struct sc_machine_config cfg;
	struct sc_machine *m = NULL;

	sc_machine_config_init(&cfg);
	bad(&cfg);
	assert_int_equal(sc_machine_create(&cfg, &m), EINVAL);
	assert_null(m);
	/* Every refusal says why. */
	assert_true(sc_machine_config_error()[0] != '\0');
}

/* A config that sets one field to a bad value. */
#define BAD_CONFIG(name, field, value)					\
	static void							\
	name(struct sc_machine_config *c)				\
	{								\
		c->field = (value);					\
	}

BAD_CONFIG(no_cpu, ncpu, 0)
BAD_CONFIG(too_many_cpus, ncpu, 257)
BAD_CONFIG(no_kstack, kstack_pages, 0)
BAD_CONFIG(huge_kstack, kstack_pages, 4096)
BAD_CONFIG(neg_timeout, capture_timeout_ns, -1)
BAD_CONFIG(bad_strategy, wait_strategy, 7)
BAD_CONFIG(neg_spin, wait_spin_ns, -5)
BAD_CONFIG(bad_signo, ipi_signo, 0)
BAD_CONFIG(sigkill, ipi_signo, SIGKILL)
BAD_CONFIG(sigsegv, ipi_signo, SIGSEGV)
/* Synchronous fault signals: a handler that returns from a real one loops
 * on the faulting instruction for ever. */
BAD_CONFIG(sigfpe, ipi_signo, SIGFPE)
BAD_CONFIG(sigill, ipi_signo, SIGILL)
BAD_CONFIG(sigtrap, ipi_signo, SIGTRAP)
BAD_CONFIG(sigsys, ipi_signo, SIGSYS)
BAD_CONFIG(sig_too_big, ipi_signo, 65)
BAD_CONFIG(huge_trace, trace_events, (size_t)1 << 30)
BAD_CONFIG(unknown_mistake, mistakes, 0x8000u)
BAD_CONFIG(unknown_arch, arch, 2)

/* The deadlocks that only the bounded wait ends refuse an unbounded one. */
static void
unbounded_spin_held(struct sc_machine_config *c)
{
	c->mistakes = SC_MISTAKE_SPIN_HELD;
	c->capture_timeout_ns = 0;
}
static void
unbounded_hold(struct sc_machine_config *c)
{
	c->hold_lock_across_ipi = 1;
	c->capture_timeout_ns = 0;
}

static void
unknown_sched(struct sc_machine_config *c)
{
	c->sched = 2;
}
static void
unknown_protocol(struct sc_machine_config *c)
{
	c->protocol = -1;
}
static void
unbounded_nmi(struct sc_machine_config *c)
{
	c->protocol = SC_PROTO_NMI;
	c->capture_timeout_ns = 0;
}

static void
test_bad_configs(void **state)
{
	struct sc_machine *m = NULL;

	expect_config_einval(no_cpu);
	expect_config_einval(too_many_cpus);
	expect_config_einval(no_kstack);
	expect_config_einval(huge_kstack);
	expect_config_einval(neg_timeout);
	expect_config_einval(bad_strategy);
	expect_config_einval(neg_spin);
	expect_config_einval(bad_signo);
	expect_config_einval(sigkill);
	expect_config_einval(sigsegv);
	expect_config_einval(sigfpe);
	expect_config_einval(sigill);
	expect_config_einval(sigtrap);
	expect_config_einval(sigsys);
	expect_config_einval(sig_too_big);
	expect_config_einval(huge_trace);
	expect_config_einval(unknown_mistake);
	expect_config_einval(unknown_arch);
	expect_config_einval(unbounded_spin_held);
	expect_config_einval(unbounded_hold);
	expect_config_einval(unknown_sched);
	expect_config_einval(unknown_protocol);
	expect_config_einval(unbounded_nmi);
	assert_int_equal(sc_machine_create(NULL, &m), EINVAL);
	assert_null(m);
}

static void
test_defaults(void **state)
{
	struct sc_machine_config cfg;

	sc_machine_config_init(&cfg);
	assert_int_equal(cfg.ncpu, 2);
	assert_int_equal(cfg.kstack_pages, 4);
	assert_int_equal(cfg.ipi_signo, SIGRTMIN + 2);
	assert_int_equal(cfg.capture_timeout_ns, 1000L * 1000 * 1000);
	assert_int_equal(cfg.wait_strategy, SC_WAIT_SPIN_SLEEP);
	assert_int_equal(cfg.trace_events, 0);
	assert_int_equal(cfg.mistakes, 0);
	assert_int_equal(cfg.arch, SC_ARCH_AMD64);
	assert_int_equal(cfg.protocol, SC_PROTO_IPI);
	assert_null(cfg.hook);
}

/* ULE by default; STACKCAP_SCHED picks the default, not an explicit
 * choice; a value that is neither name means ULE. */
static void
test_sched_default(void **state)
{
	struct sc_machine_config cfg;
	const char *env = getenv("STACKCAP_SCHED");
	char *saved = env != NULL ? strdup(env) : NULL;
	struct sc_machine *m;

	unsetenv("STACKCAP_SCHED");
	sc_machine_config_init(&cfg);
	assert_int_equal(cfg.sched, SC_SCHED_ULE);
	setenv("STACKCAP_SCHED", "4bsd", 1);
	sc_machine_config_init(&cfg);
	assert_int_equal(cfg.sched, SC_SCHED_4BSD);
	setenv("STACKCAP_SCHED", "ule", 1);
	sc_machine_config_init(&cfg);
	assert_int_equal(cfg.sched, SC_SCHED_ULE);
	setenv("STACKCAP_SCHED", "cfs", 1);
	sc_machine_config_init(&cfg);
	assert_int_equal(cfg.sched, SC_SCHED_ULE);
	/* Each scheduler makes a machine that runs. */
	setenv("STACKCAP_SCHED", "4bsd", 1);
	sc_machine_config_init(&cfg);
	cfg.sched = SC_SCHED_ULE;
	assert_int_equal(sc_machine_create(&cfg, &m), 0);
	sc_machine_destroy(m);
	cfg.sched = SC_SCHED_4BSD;
	assert_int_equal(sc_machine_create(&cfg, &m), 0);
	sc_machine_destroy(m);
	if (saved != NULL)
		setenv("STACKCAP_SCHED", saved, 1);
	else
		unsetenv("STACKCAP_SCHED");
	free(saved);
}

static void
foreign_handler(int sig)
{
	(void)sig;
}

/* A signal someone else handles is refused; the handler stays theirs. */
static void
test_foreign_handler_is_refused(void **state)
{
	struct sc_machine_config cfg;
	struct sigaction sa, now;
	struct sc_machine *m = NULL;
	int signo = SIGRTMIN + 5;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = foreign_handler;
	assert_int_equal(sigaction(signo, &sa, NULL), 0);
	sc_machine_config_init(&cfg);
	cfg.ipi_signo = signo;
	assert_int_equal(sc_machine_create(&cfg, &m), EBUSY);
	assert_null(m);
	assert_int_equal(sigaction(signo, NULL, &now), 0);
	assert_ptr_equal(now.sa_handler, foreign_handler);
	sa.sa_handler = SIG_DFL;
	assert_int_equal(sigaction(signo, &sa, NULL), 0);
}

/* Two machines share one signal; the last destroy restores SIG_DFL. */
static void
test_shared_signal_restored(void **state)
{
	struct sc_machine_config cfg;
	struct sc_machine *a, *b;
	struct sigaction now;
	int signo = SIGRTMIN + 6;

	sc_machine_config_init(&cfg);
	cfg.ipi_signo = signo;
	assert_int_equal(sc_machine_create(&cfg, &a), 0);
	assert_int_equal(sc_machine_create(&cfg, &b), 0);
	sc_machine_destroy(a);
	assert_int_equal(sigaction(signo, NULL, &now), 0);
	assert_true((now.sa_flags & SA_SIGINFO) != 0);	/* still ours */
	sc_machine_destroy(b);
	assert_int_equal(sigaction(signo, NULL, &now), 0);
	assert_true((now.sa_flags & SA_SIGINFO) == 0);
	assert_ptr_equal(now.sa_handler, SIG_DFL);
}

/*
 * A handler that the program installs on the IPI signal after create is
 * the program's: the last destroy used to replace it with SIG_DFL.
 */
static void
test_later_handler_kept(void **state)
{
	struct sc_machine_config cfg;
	struct sigaction sa, now;
	struct sc_machine *m;
	int signo = SIGRTMIN + 7;

	sc_machine_config_init(&cfg);
	cfg.ipi_signo = signo;
	assert_int_equal(sc_machine_create(&cfg, &m), 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = foreign_handler;
	assert_int_equal(sigaction(signo, &sa, NULL), 0);
	sc_machine_destroy(m);
	assert_int_equal(sigaction(signo, NULL, &now), 0);
	assert_ptr_equal(now.sa_handler, foreign_handler);
	sa.sa_handler = SIG_DFL;
	assert_int_equal(sigaction(signo, &sa, NULL), 0);
}

static void
nop(void *arg)
{
}

static void
test_bad_arguments(void **state)
{
	struct sc_thread *td = NULL;
	struct sc_proc *p = NULL;
	struct sc_kstack kk;
	size_t n;

	assert_int_equal(sc_proc_create(NULL, "x", &p), EINVAL);
	assert_int_equal(sc_proc_create(tm, NULL, &p), EINVAL);
	assert_int_equal(sc_proc_create(tm, "x", NULL), EINVAL);
	assert_int_equal(sc_thread_create(NULL, "t", nop, NULL, &td), EINVAL);
	assert_int_equal(sc_thread_create(tp, NULL, nop, NULL, &td), EINVAL);
	assert_int_equal(sc_thread_create(tp, "t", NULL, NULL, &td), EINVAL);
	assert_int_equal(sc_thread_create(tp, "t", nop, NULL, NULL), EINVAL);
	assert_int_equal(sc_ithread_create(tp, "t", NULL, NULL, &td), EINVAL);
	assert_null(td);
	/* EINVAL, not a KASSERT: the panic handler is not called (its
	 * default aborts). */
	n = 7;
	sc_set_panic_handler(sc_test_panic_record);
	assert_int_equal(sc_proc_kstack(NULL, &kk, 1, &n), EINVAL);
	assert_int_equal(sc_proc_kstack(tp, NULL, 1, &n), EINVAL);
	assert_int_equal(sc_proc_kstack(tp, &kk, 1, NULL), EINVAL);
	assert_int_equal(sc_proc_kstack(tp, NULL, 0, NULL), EINVAL);
	assert_int_equal(sc_test_panic_count(), 0);
	assert_int_equal(n, 7);
	assert_int_equal(sc_proc_kstack(tp, NULL, 0, &n), 0);	/* count */
	assert_int_equal(n, 0);
	/* Long names are truncated, never overrun. */
	assert_int_equal(sc_proc_create(tm, "a-process-name-longer-than-"
	    "nineteen-characters", &p), 0);
	assert_int_equal(strlen(sc_proc_comm(p)), 19);
	assert_int_equal(sc_ithread_create(p, "a-thread-name-longer-than-"
	    "thirty-one-characters", nop, NULL, &td), 0);
	assert_int_equal(strlen(sc_thread_name(td)), 31);
	assert_int_equal(sc_proc_kstack(p, &kk, 1, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(strlen(kk.tdname), 31);
	assert_int_equal(sc_ithread_schedule(td), 0);
	assert_int_equal(sc_thread_join(td), 0);
	/* The accessors on an unknown CPU. */
	assert_null(sc_machine_idlethread(tm, -1));
	assert_null(sc_machine_idlethread(tm, sc_machine_ncpu(tm)));
	assert_int_equal(sc_curcpu(), SC_NOCPU);
	assert_null(sc_curthread());
	assert_string_equal(sc_errname(ETIMEDOUT), "ETIMEDOUT");
	assert_string_equal(sc_errname(12345), "E?");
	assert_string_equal(sc_trace_event_name(SC_TRACE_NEVENTS), "?");
}

/* The version, and the sized entry points behind the wrappers. */
static void
test_version_and_sizes(void **state)
{
	struct sc_machine_config cfg;
	struct sc_machine *m = NULL;
	struct sc_kstack kk[2];
	struct sc_proc *p;
	struct sc_thread *td;
	char buf[32];
	size_t n, i;

	assert_int_equal(sc_version(), STACKCAP_VERSION_HEX);
	snprintf(buf, sizeof(buf), "%d.%d.%d", STACKCAP_VERSION_MAJOR,
	    STACKCAP_VERSION_MINOR, STACKCAP_VERSION_PATCH);
	assert_string_equal(sc_version_string(), buf);

	/* config_init writes no more than it is told. */
	memset(&cfg, 0x5a, sizeof(cfg));
	sc_machine_config_init_sz(&cfg, offsetof(struct sc_machine_config,
	    ipi_signo));
	assert_int_equal(cfg.ncpu, 2);
	assert_int_equal(cfg.kstack_pages, 4);
	assert_int_equal(cfg.ipi_signo, 0x5a5a5a5a);
	/* A size below the first release's struct is refused. */
	sc_machine_config_init(&cfg);
	assert_int_equal(sc_machine_create_sz(&cfg, 8, &m), EINVAL);
	assert_null(m);

	/* The spares of a kstack are zero; a too small element: EINVAL. */
	assert_int_equal(sc_machine_create(&cfg, &m), 0);
	assert_int_equal(sc_proc_create(m, "sizes", &p), 0);
	assert_int_equal(sc_ithread_create(p, "t", nop, NULL, &td), 0);
	memset(kk, 0xff, sizeof(kk));
	assert_int_equal(sc_proc_kstack(p, kk, 2, &n), 0);
	assert_int_equal(n, 1);
	for (i = 0; i < sizeof(kk[0].kk_spare) / sizeof(kk[0].kk_spare[0]);
	    i++)
		assert_int_equal(kk[0].kk_spare[i], 0);
	assert_int_equal(kk[0].pid, sc_proc_pid(p));	/* stackcap 0.5 */
	assert_int_equal(kk[1].tid, -1);		/* untouched */
	assert_int_equal(sc_proc_kstack_sz(p, kk, 16, 2, &n), EINVAL);
	assert_int_equal(sc_ithread_schedule(td), 0);
	assert_int_equal(sc_thread_join(td), 0);
	sc_machine_destroy(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_configs),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_sched_default),
		cmocka_unit_test(test_foreign_handler_is_refused),
		cmocka_unit_test(test_shared_signal_restored),
		cmocka_unit_test(test_later_handler_kept),
		cmocka_unit_test(test_version_and_sizes),
		cmocka_unit_test_setup_teardown(test_bad_arguments,
		    sc_test_setup_2cpu, sc_test_teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
