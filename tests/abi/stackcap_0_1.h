/*
 * The layouts of stackcap 0.1's structs that a caller allocates, and the
 * entry points that take them, as a program built against that header
 * saw them.  test_abi builds against this copy, not against stackcap.h,
 * and runs with the library as it is now: the structs there have grown.
 * Never edit this file to follow stackcap.h: it is the old contract.
 */
#ifndef STACKCAP_0_1_H
#define STACKCAP_0_1_H

#include <stddef.h>
#include <stdint.h>

#define SC_STACK_MAX	64

struct sc_stack {
	int		depth;
	uintptr_t	pcs[SC_STACK_MAX];
};

struct sc_machine;
struct sc_proc;
struct sc_thread;

typedef void (*sc_hook_fn)(void *arg, int point, struct sc_thread *td);

struct sc_machine_config {
	int	ncpu;
	int	kstack_pages;
	int	ipi_signo;
	long	capture_timeout_ns;
	int	wait_strategy;
	long	wait_spin_ns;
	size_t	trace_events;
	sc_hook_fn hook;
	void	*hook_arg;
	int	hold_lock_across_ipi;
};

struct sc_counters {
	uint64_t	switches;
	uint64_t	sleeps;
	uint64_t	wakeups;
	uint64_t	swapouts, swapins;
	uint64_t	spin_waits;
	uint64_t	blocked_waits;
	uint64_t	proc_lock_waits;
	uint64_t	preemptions;
	uint64_t	migrations;
	uint64_t	exits;
	uint64_t	ipis_sent;
	uint64_t	ipis_received;
	uint64_t	ipis_deferred;
	uint64_t	trace_answered;
	uint64_t	trace_stale;
	uint64_t	captures;
	uint64_t	captures_running;
	uint64_t	retry_nocpu;
	uint64_t	retry_idle;
	uint64_t	retry_other;
	uint64_t	retry_offcpu;
	uint64_t	ebusy;
	uint64_t	timeouts;
};

enum {
	SC_KKST_STATE_STACKOK = 0,
	SC_KKST_STATE_SWAPPED,
	SC_KKST_STATE_RUNNING
};

struct sc_kstack {
	int		tid;
	int		state;
	char		tdname[32];
	struct sc_stack	stack;
};

void	sc_machine_config_init(struct sc_machine_config *cfg);
int	sc_machine_create(const struct sc_machine_config *cfg,
	    struct sc_machine **mp);
void	sc_machine_destroy(struct sc_machine *m);
void	sc_machine_counters(struct sc_machine *m, struct sc_counters *c);
int	sc_proc_create(struct sc_machine *m, const char *comm,
	    struct sc_proc **pp);
int	sc_ithread_create(struct sc_proc *p, const char *name,
	    void (*fn)(void *), void *arg, struct sc_thread **tdp);
int	sc_thread_create(struct sc_proc *p, const char *name,
	    void (*fn)(void *), void *arg, struct sc_thread **tdp);
int	sc_thread_join(struct sc_thread *td);
int	sc_thread_tid(const struct sc_thread *td);
int	sc_proc_kstack(struct sc_proc *p, struct sc_kstack *out, size_t max,
	    size_t *n);

#endif /* !STACKCAP_0_1_H */
