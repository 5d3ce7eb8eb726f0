/*
 * A Promela model of the capture of a running thread: FreeBSD 13/14's
 * stack_save_td() and its IPI_TRACE handler (sys/x86/x86/stack_machdep.c),
 * as stackcap implements it (src/stack_machdep.c), against a scheduler
 * that switches threads in ULE's order (sys/kern/sched_ule.c: the outgoing
 * thread's td_oncpu becomes NOCPU last; the incoming thread sets its own
 * after the switch), thread exit and the reuse of a thread's structure.
 *
 * Checked by tools/check_model.sh (ctest label `model`):
 * - the final protocol: no misattribution (a capture that returns a stack
 *   for td walked td, this td, for this request), no invalid end state (no
 *   deadlock), and termination under weak fairness (<> done);
 * - each mistake, a compile-time switch (spin -DNAME): a counterexample.
 *     STALE_ANSWER      the answer word is not cleared before the IPI,
 *                       and an earlier capture left its answer there
 *                       (init seeds it: the kernel's clear after use is
 *                       what STALE_ANSWER drops too)
 *     NO_PROC_LOCK      the target's proc lock is not held
 *     SPIN_HELD         the requester holds a spin lock the target needs
 *                       inside a spinlock section of its own
 *     HOLD_THREAD_LOCK  the thread lock is kept across the IPI
 *     NOCPU_OFF_CPU     td_oncpu == NOCPU is taken for "off every CPU":
 *                       the thread lock re-taken, the pcb walked, without
 *                       looking at TD_IS_RUNNING() again
 *     PROTO_NMI         FreeBSD 12's protocol (src/stack_machdep_nmi.c):
 *                       the thread lock held throughout, td_oncpu read
 *                       under it, an NMI that the target CPU takes with
 *                       interrupts disabled too
 *   and the scheduler's order: ULE's by default, 4BSD's with SCHED_4BSD
 *   (td_oncpu changes under the thread lock).  PROTO_NMI is verified
 *   with SCHED_4BSD and has a counterexample under ULE.
 *
 * Threads: T (the target, a structure that exit frees and a new thread
 * reuses: `gen` tells the threads apart), O (another thread), and each
 * CPU's idle thread.  The model is bounded: MAXSW switches in all, one
 * exit, so that every run ends.
 */

#define NCPU	2
#define T	0
#define O	1
#define IDLE0	2		/* IDLE0 + c is CPU c's idle thread */
#define NOCPU	9
#define NONE	9
#define MAXSW	3

byte	cur[NCPU];		/* pc_curthread */
bool	running[2];		/* TD_IS_RUNNING(T), (O) */
byte	oncpu[2];		/* td_oncpu of T, O */
byte	gen;			/* T's structure: which thread it holds now */
bool	tlock;			/* T's thread lock */
bool	plock;			/* T's proc lock */
bool	other;			/* a spin lock the target may need */
bool	intr_off[NCPU];		/* interrupts disabled */
bool	ipi[NCPU];		/* IPI_TRACE pending */
bool	nmi[NCPU];		/* PROTO_NMI: an NMI pending */
byte	nmi_pending = NONE;	/* PROTO_NMI: the thread it is for */
byte	req = NONE;		/* the open request's CPU, or NONE */
byte	seq;			/* request sequence */
byte	answer = NONE;		/* stack_intr_td */
byte	walked_td = NONE;	/* whose stack the buffer holds ... */
byte	walked_gen;		/* ... which thread of that structure ... */
byte	walked_seq;		/* ... for which request */
byte	nsw;			/* switches so far */
bool	exited;			/* T's thread exited (its structure reused) */
bool	done;			/* the capture returned */

/* Spin locks: take with interrupts disabled (the caller sets intr_off). */
inline lock(l)   { atomic { l == 0 -> l = 1 } }
inline unlock(l) { l = 0 }

/* IPI_TRACE on CPU c, taken only when on holds (stack_capture_intr()). */
inline ipi_trace(c, on)
{
	atomic {
		ipi[c] && on ->
		ipi[c] = 0;
		if
		:: req == c ->
			walked_td = cur[c];
			walked_gen = (cur[c] == T -> gen : 0);
			walked_seq = seq;
			answer = cur[c];
			req = NONE
		:: else -> skip		/* a late IPI: nothing */
		fi
	}
}

#ifdef PROTO_NMI
/* stack_nmi_handler(), interrupts disabled or not: only for the thread
 * it is meant for; any other's NMI is not consumed. */
inline nmi_handler(c)
{
	atomic {
		nmi[c] ->
		nmi[c] = 0;
		if
		:: nmi_pending == cur[c] ->
			walked_td = cur[c];
			walked_gen = (cur[c] == T -> gen : 0);
			nmi_pending = NONE
		:: else -> skip
		fi
	}
}
#endif

/*
 * mtx_lock_spin() on CPU c, inside the spinlock section the caller
 * entered (intr_off[c]).  alone: the section is this lock's only one.
 * The wait leaves it between attempts ("Give interrupts a chance while we
 * spin", _mtx_lock_spin_cookie() and thread_lock_flags_() in
 * sys/kern/kern_mutex.c), and spinlock_exit() (sys/amd64/amd64/machdep.c)
 * turns interrupts on only when the count drops to zero: so an IPI_TRACE
 * is taken on top of the wait when the CPU waits for its only spin lock,
 * never when it holds another.  A CPU that spins still takes NMIs.
 */
inline cpu_lock(c, l, alone)
{
	do
	:: atomic { l == 0 -> l = 1 }; break
	:: ipi_trace(c, alone)
#ifdef PROTO_NMI
	:: nmi_handler(c)
#endif
	od
}

/* A CPU: its IPI handler, and its scheduler. */
proctype cpu(byte c)
{
	bool alone;

end:
	do
	/* IPI_TRACE, taken only with interrupts enabled. */
	:: ipi_trace(c, !intr_off[c])
#ifdef PROTO_NMI
	:: nmi_handler(c)
#endif
	/* T switches off (it sleeps or yields; the CPU goes idle), in
	 * ULE's order: thread_lock(), off the CPU, td_oncpu = NOCPU last.
	 * A yield wants the thread lock alone; a sleep wants it after its
	 * channel's chain lock (which no one else takes here, so it is not
	 * modelled: only its interrupts stay disabled). */
	:: nsw < MAXSW && cur[c] == T ->
		intr_off[c] = 1;
#ifdef SPIN_HELD
		/* T needs the other lock inside a spinlock section of its
		 * own: interrupts stay disabled while it waits. */
		cpu_lock(c, other, 0);
		unlock(other);
#endif
		if
		:: alone = 1
		:: alone = 0
		fi;
		cpu_lock(c, tlock, alone);
		alone = 0;
#ifdef SCHED_4BSD
		atomic { nsw++; running[T] = 0; cur[c] = IDLE0 + c;
		    oncpu[T] = NOCPU };
#else
		atomic { nsw++; running[T] = 0; cur[c] = IDLE0 + c };
		oncpu[T] = NOCPU;
#endif
		unlock(tlock);
		intr_off[c] = 0
	/* T switches on here; the incoming thread sets its own td_oncpu
	 * after the switch. */
	:: nsw < MAXSW && cur[c] == IDLE0 + c && !running[T] && !exited ->
		intr_off[c] = 1;
		cpu_lock(c, tlock, 0);	/* inside the switch's own section */
		atomic {
			if
			:: !running[T] && !exited ->
				nsw++; running[T] = 1; cur[c] = T;
#ifdef SCHED_4BSD
				oncpu[T] = c
#endif
			:: else -> skip
			fi
		};
		unlock(tlock);
		intr_off[c] = 0;
#ifndef SCHED_4BSD
		if
		:: cur[c] == T && oncpu[T] == NOCPU -> oncpu[T] = c
		:: else -> skip
		fi
#endif
	/* T's thread exits (thread_exit(): its proc lock, then its thread
	 * lock to switch away), and a new thread takes its structure, not
	 * running yet.  Once, so that the model is finite. */
	:: atomic {
		gen == 0 && !exited && running[T] && oncpu[T] == c &&
		    plock == 0 && tlock == 0 ->
		exited = 1;
		running[T] = 0;
		oncpu[T] = NOCPU;
		cur[c] = IDLE0 + c;
		gen++
	   }
	/* ... and that new thread starts on this CPU. */
	:: atomic {
		exited && !running[T] && cur[c] == IDLE0 + c && tlock == 0 ->
		exited = 0;
		running[T] = 1;
		cur[c] = T;
		oncpu[T] = c
	   }
	od
}

/* The requester: stack_save_td() of T, from a plain pthread.  init starts
 * it once the machine is set up, so that it never looks at T before T
 * runs (cur[] would read 0, which is T). */
proctype requester()
{
	byte mygen, myseq, cpuid;

	/* The caller: the proc lock (unless NO_PROC_LOCK), T's lock. */
#ifndef NO_PROC_LOCK
	atomic { plock == 0 -> plock = 1 };
#endif
#ifdef SPIN_HELD
	lock(other);
#endif
	lock(tlock);
	mygen = gen;
#ifdef PROTO_NMI
	/* FreeBSD 12's stack_save_td_running(): the thread lock is held
	 * throughout and td_oncpu is read under it. */
	if
	:: !running[T] -> goto pcb
	:: else -> skip
	fi;
	cpuid = oncpu[T];
	/* ipi_cpu(NOCPU) reads the word before cpu_apic_ids[]: a panic,
	 * an NMI to some CPU or none, most likely a wait for ever. */
	assert(cpuid != NOCPU);
	atomic { nmi_pending = T; nmi[cpuid] = 1 };
	nmi_pending == NONE;
	assert(walked_td == T && walked_gen == mygen);
	goto out;
#endif
again:
	if
	:: !running[T] -> goto pcb
	:: else -> skip
	fi;
#ifndef HOLD_THREAD_LOCK
	unlock(tlock);
#endif
	cpuid = oncpu[T];
	if
	:: cpuid == NOCPU ->
#ifndef HOLD_THREAD_LOCK
		lock(tlock);
#endif
#ifdef NOCPU_OFF_CPU
		goto pcb
#else
		goto again
#endif
	:: else -> skip
	fi;
	atomic {
		seq++;
		myseq = seq;
#ifndef STALE_ANSWER
		answer = NONE;
#endif
		req = cpuid;
		ipi[cpuid] = 1
	};
	/* The kernel's unbounded wait, so that a deadlock shows. */
	answer != NONE;
	if
	:: answer == T ->
		/* Taken: the buffer must be this thread's, this request's. */
		assert(walked_td == T && walked_gen == mygen &&
		    walked_seq == myseq);
#ifndef HOLD_THREAD_LOCK
		lock(tlock);
#endif
		goto out
	:: else ->
		answer = NONE;
#ifndef HOLD_THREAD_LOCK
		lock(tlock);
#endif
		goto again
	fi;
pcb:
	/*
	 * The pcb walk: T is not running and cannot start to run while its
	 * lock is held, so no CPU runs it (its saved %rbp is current).
	 */
	assert(cur[0] != T && cur[1] != T);
out:
	unlock(tlock);
#ifdef SPIN_HELD
	unlock(other);
#endif
	plock = 0;
	done = 1
}

init {
	atomic {
		/* CPU 0 runs T, CPU 1 runs O; both started. */
		cur[0] = T; running[T] = 1; oncpu[T] = 0;
		cur[1] = O; running[O] = 1; oncpu[O] = 1;
#ifdef STALE_ANSWER
		/* A capture before this one was answered by T. */
		answer = T; walked_td = T; walked_seq = 0;
#endif
		run cpu(0);
		run cpu(1);
		run requester()
	}
}

ltl terminates { <> done }
