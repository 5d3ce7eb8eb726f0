/*
 * "Interrupts disabled": the library's soft mask against blocking the IPI
 * signal, the choice docs/design.md ("Interrupts disabled: soft mask or
 * pthread_sigmask") explains.
 *
 * On a simulated CPU (a one-CPU machine; the timing thread runs there, so
 * the soft mask is the real one, not a copy), each round times ITERS
 * enter/exit pairs of each of:
 * - sc_spinlock_enter() + sc_spinlock_exit(): the soft mask (a relaxed
 *   load and store of the CPU's count, signal fences, the deferred check);
 * - pthread_sigmask(SIG_BLOCK) + pthread_sigmask(SIG_SETMASK) of the
 *   machine's IPI signal: two system calls;
 * - for comparison, a relaxed atomic_fetch_add + atomic_fetch_sub pair
 *   (lock xadd) with signal fences, on a counter of this file.
 * A getppid() system call is timed beside them, as the machine's price of
 * a system call.  Each figure is the best of ROUNDS rounds (the least
 * disturbed by other load), with the median beside it; the ratios to the
 * soft mask are what matter.
 *
 * usage: bench_sigmask [iterations]   (pairs per round, default 1000000)
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench_util.h"
#include "stackcap.h"

#define ROUNDS	7
#define NWAYS	4

static long	iters = 1000000;
static int	ipi_signo;
static _Atomic int rmw_count;
static volatile pid_t sink;

static const char *const way_name[NWAYS] = {
	"soft mask (sc_spinlock_enter/exit)",
	"pthread_sigmask BLOCK + SETMASK",
	"relaxed fetch_add/fetch_sub + fences",
	"getppid() system call",
};

struct bench {
	double		ns[NWAYS][ROUNDS];	/* ns per pair, each round */
};

__attribute__((noinline)) static void
soft_pair(void)
{
	sc_spinlock_enter();
	sc_spinlock_exit();
}

__attribute__((noinline)) static void
sigmask_pair(const sigset_t *set)
{
	sigset_t old;

	pthread_sigmask(SIG_BLOCK, set, &old);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

__attribute__((noinline)) static void
rmw_pair(void)
{
	atomic_fetch_add_explicit(&rmw_count, 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	atomic_fetch_sub_explicit(&rmw_count, 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
}

/* ns per call of way w, over iters calls. */
static double
time_way(int w, const sigset_t *set)
{
	double t0;
	long i;

	t0 = now_ns();
	for (i = 0; i < iters; i++) {
		switch (w) {
		case 0:
			soft_pair();
			break;
		case 1:
			sigmask_pair(set);
			break;
		case 2:
			rmw_pair();
			break;
		default:
			sink = getppid();
			break;
		}
	}
	return ((now_ns() - t0) / (double)iters);
}

/* The simulated thread: every round times each way in turn. */
static void
bench_thread(void *arg)
{
	struct bench *b = arg;
	sigset_t set;
	int r, w;

	sigemptyset(&set);
	sigaddset(&set, ipi_signo);
	for (r = 0; r < ROUNDS; r++)
		for (w = 0; w < NWAYS; w++)
			b->ns[w][r] = time_way(w, &set);
}

int
main(int argc, char **argv)
{
	struct sc_machine_config cfg;
	struct sc_machine *m;
	struct sc_proc *p;
	struct sc_thread *td;
	struct bench b = { 0 };
	double best[NWAYS], median[NWAYS];
	int error, w;

	if (argc > 1 && (iters = strtol(argv[1], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: bench_sigmask [iterations]\n");
		return (2);
	}
	sc_machine_config_init(&cfg);
	cfg.ncpu = 1;
	ipi_signo = cfg.ipi_signo;
	if ((error = sc_machine_create(&cfg, &m)) != 0)
		die("sc_machine_create", error);
	if ((error = sc_proc_create(m, "bench", &p)) != 0)
		die("sc_proc_create", error);
	if ((error = sc_thread_create(p, "sigmask", bench_thread, &b,
	    &td)) != 0)
		die("sc_thread_create", error);
	if ((error = sc_thread_join(td)) != 0)
		die("sc_thread_join", error);
	sc_machine_destroy(m);

	printf("bench_sigmask: %d rounds, %ld pairs/round; best of rounds "
	    "(median)\n", ROUNDS, iters);
	for (w = 0; w < NWAYS; w++) {
		qsort(b.ns[w], ROUNDS, sizeof(b.ns[w][0]), dbl_cmp);
		best[w] = b.ns[w][0];
		median[w] = b.ns[w][ROUNDS / 2];
	}
	for (w = 0; w < NWAYS; w++)
		printf("  %-38s %9.2f ns (%9.2f)  %8.1fx the soft mask\n",
		    way_name[w], best[w], median[w],
		    best[0] > 0 ? best[w] / best[0] : 0.0);
	return (0);
}
