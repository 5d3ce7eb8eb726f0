/*
 * Interrupt disabling and spin locks.
 *
 * Kernel counterparts: spinlock_enter()/spinlock_exit()
 * (sys/amd64/amd64/machdep.c), mtx_lock_spin() and
 * thread_lock() (sys/kern/kern_mutex.c), blocked_lock.
 *
 * "Interrupts disabled" is a per-CPU soft mask: the IPI handler checks
 * pc_spinlock_count and, when it is not zero, leaves the vector pending and
 * sets pc_intr_deferred; spinlock_exit() handles it when the count drops to
 * zero.  This costs two plain memory operations instead of two
 * pthread_sigmask() system calls per lock (docs/design.md has the
 * measurement).  The signal is delivered to the CPU's own pthread, so the
 * count needs no ordering stronger than a signal fence.
 */
#include <sched.h>

#include "sc_internal.h"

/* The CPU this pthread is, or NULL for a plain pthread. */
static __thread struct sc_pcpu *sc_pcpu_self SC_TLS_IE;
/* A per-pthread token that owns locks taken outside the machine. */
static __thread char sc_pthread_token SC_TLS_IE;
/* Spin locks held by a plain pthread (it has no CPU to count them). */
static __thread int sc_plain_held SC_TLS_IE;

/* blocked_lock: td_lock points here while td's context is being saved. */
struct sc_spin sc__blocked_lock = { .sp_name = "blocked lock" };

void
sc__pcpu_set(struct sc_pcpu *pc)
{
	sc_pcpu_self = pc;
}

struct sc_pcpu *
sc__pcpu_handler(void)
{
	return (sc_pcpu_self);
}

/*
 * A simulated thread may resume on another CPU pthread after any call that
 * may switch, and the compiler may keep the address of a TLS variable for
 * the whole of a function.  This function is never inlined nor analysed
 * (noipa), so every call reads the current pthread's value afresh.
 */
SC_NOIPA struct sc_pcpu *
sc__pcpu_get(void)
{
	return (sc_pcpu_self);
}

uintptr_t
sc__owner_self(void)
{
	struct sc_pcpu *pc = sc__pcpu_get();

	if (pc != NULL)
		return ((uintptr_t)atomic_load_explicit(&pc->pc_curthread,
		    memory_order_relaxed));
	return ((uintptr_t)&sc_pthread_token);
}

void
sc_spinlock_enter(void)
{
	struct sc_pcpu *pc = sc__pcpu_get();

	if (pc == NULL)
		return;
	atomic_store_explicit(&pc->pc_spinlock_count,
	    atomic_load_explicit(&pc->pc_spinlock_count,
	    memory_order_relaxed) + 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
}

void
sc_spinlock_exit(void)
{
	struct sc_pcpu *pc = sc__pcpu_get();
	int n;

	if (pc == NULL)
		return;
	n = atomic_load_explicit(&pc->pc_spinlock_count, memory_order_relaxed);
	SC_KASSERT(n > 0, , "spinlock_exit without spinlock_enter on cpu%d",
	    pc->pc_cpuid);
	atomic_signal_fence(memory_order_seq_cst);
	atomic_store_explicit(&pc->pc_spinlock_count, n - 1,
	    memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	/*
	 * An IPI that arrived while interrupts were off runs now, as the
	 * kernel's does when intr_restore() re-enables interrupts.
	 */
	if (n == 1 && atomic_load_explicit(&pc->pc_intr_deferred,
	    memory_order_relaxed))
		sc__ipi_deferred(pc, (uintptr_t)__builtin_frame_address(0),
		    (uintptr_t)&&here);
here:
	return;
}

void
sc__spin_init(struct sc_spin *sp, const char *name)
{
	atomic_init(&sp->sp_owner, 0);
	sp->sp_name = name;
}

void
sc__spin_lock(struct sc_machine *m, struct sc_spin *sp)
{
	struct sc_pcpu *pc;
	uintptr_t self, zero;
	int n;

	self = sc__owner_self();
	SC_KASSERT(atomic_load_explicit(&sp->sp_owner, memory_order_relaxed) !=
	    self, , "spin lock \"%s\" recursed", sp->sp_name);
	sc_spinlock_enter();
	pc = sc__pcpu_get();
	for (n = 0;; n++) {
		zero = 0;
		if (atomic_load_explicit(&sp->sp_owner,
		    memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_weak_explicit(&sp->sp_owner, &zero,
		    self, memory_order_acquire, memory_order_relaxed))
			break;
		if (n == 0 && m != NULL)
			SC_CNT_INC(m, spin_waits);
		/*
		 * The holder's CPU pthread may be descheduled by Linux (more
		 * simulated CPUs than real cores): spin briefly, then yield.
		 */
		if (n < 64)
			__builtin_ia32_pause();
		else
			sched_yield();
	}
	if (pc != NULL) {
		SC_KASSERT(pc->pc_nheld < (int)(sizeof(pc->pc_held) /
		    sizeof(pc->pc_held[0])), , "too many spin locks held");
		pc->pc_held[pc->pc_nheld++] = sp;
	} else
		sc_plain_held++;
}

static void
sc_spin_forget(struct sc_pcpu *pc, struct sc_spin *sp)
{
	int i;

	for (i = pc->pc_nheld - 1; i >= 0; i--) {
		if (pc->pc_held[i] != sp)
			continue;
		for (; i < pc->pc_nheld - 1; i++)
			pc->pc_held[i] = pc->pc_held[i + 1];
		pc->pc_nheld--;
		return;
	}
}

void
sc__spin_unlock(struct sc_spin *sp)
{
	struct sc_pcpu *pc = sc__pcpu_get();

	SC_KASSERT(atomic_load_explicit(&sp->sp_owner, memory_order_relaxed) ==
	    sc__owner_self(), , "spin lock \"%s\" not owned", sp->sp_name);
	if (pc != NULL)
		sc_spin_forget(pc, sp);
	else
		sc_plain_held--;
	atomic_store_explicit(&sp->sp_owner, 0, memory_order_release);
	sc_spinlock_exit();
}

bool
sc__spin_owned(const struct sc_spin *sp)
{
	return (atomic_load_explicit(&sp->sp_owner, memory_order_relaxed) ==
	    sc__owner_self());
}

/*
 * After a context switch the new thread owns the sched_lock that the old
 * one took (sched_switch() does the same with sched_lock.mtx_lock).
 */
void
sc__spin_handoff(struct sc_spin *sp, struct sc_thread *td)
{
	atomic_store_explicit(&sp->sp_owner, (uintptr_t)td,
	    memory_order_relaxed);
}

int
sc__spin_held_count(void)
{
	struct sc_pcpu *pc = sc__pcpu_get();

	return (pc != NULL ? pc->pc_nheld : sc_plain_held);
}

/* A parked (panicked) thread gives back every spin lock it holds. */
void
sc__spin_release_all(struct sc_pcpu *pc)
{
	while (pc->pc_nheld > 0)
		sc__spin_unlock(pc->pc_held[pc->pc_nheld - 1]);
}

/* thread_lock(): the pointer may change until we hold what it points to. */
void
sc_thread_lock(struct sc_thread *td)
{
	struct sc_spin *sp;

	for (;;) {
		sp = atomic_load_explicit(&td->td_lock, memory_order_acquire);
		if (sp == &sc__blocked_lock) {
			/* td's context is being saved: wait for cpu_switch. */
			SC_CNT_INC(td->td_machine, blocked_waits);
			while (atomic_load_explicit(&td->td_lock,
			    memory_order_acquire) == &sc__blocked_lock)
				__builtin_ia32_pause();
			continue;
		}
		sc__spin_lock(td->td_machine, sp);
		if (sp == atomic_load_explicit(&td->td_lock,
		    memory_order_relaxed))
			break;
		sc__spin_unlock(sp);
	}
}

void
sc_thread_unlock(struct sc_thread *td)
{
	sc__spin_unlock(atomic_load_explicit(&td->td_lock,
	    memory_order_relaxed));
}

int
sc_thread_lock_owned(struct sc_thread *td)
{
	return (sc__spin_owned(atomic_load_explicit(&td->td_lock,
	    memory_order_relaxed)));
}
