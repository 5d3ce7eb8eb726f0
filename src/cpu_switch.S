/*
 * Context switch and the two stack trampolines.
 *
 * Kernel counterpart: sys/amd64/amd64/cpu_switch.S (cpu_switch) and
 * sys/amd64/amd64/exception.S (fork_trampoline).  Not swapcontext(3): it
 * makes a system call per switch and restores the signal mask, which would
 * fight the per-CPU interrupt state.
 */
	.text

/*
 * void sc__cpu_switch(struct sc_pcb *oldpcb, const struct sc_pcb *newpcb,
 *     struct sc_spin **oldlockp, struct sc_spin *mtx,
 *     struct sc_spin *const *newlockp);
 *
 * Save the callee-saved registers on the old stack and %rsp, %rbp in the
 * old pcb; then store mtx into the old thread's td_lock (a release store on
 * amd64: the old context is saved before anyone can see the lock and run
 * the thread again).  Nothing touches the old stack after that store.
 * Then, as sw1 does under SCHED_ULE, wait while the new thread's td_lock
 * (*newlockp; NULL: no wait) is blocked_lock: ULE may choose a thread that
 * another CPU is still switching out, whose context is not saved yet.  The
 * wait comes after the store, so two CPUs that switch to each other's old
 * threads do not wait for each other.  Loads are not reordered with loads
 * on amd64: the new pcb is read after the lock was seen unblocked.  Last,
 * load the new thread's %rsp and registers.
 */
	.globl	sc__cpu_switch
	.hidden	sc__cpu_switch
	.type	sc__cpu_switch,@function
sc__cpu_switch:
	.cfi_startproc
	pushq	%rbx
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	pushq	%rbp
	movq	%rsp, 0(%rdi)		/* pcb_rsp */
	movq	%rbp, 8(%rdi)		/* pcb_rbp: the caller's frame */
	movq	%rcx, (%rdx)		/* td_lock = mtx: the old thread may run */
	testq	%r8, %r8
	jz	2f
	leaq	sc__blocked_lock(%rip), %rax
1:	cmpq	%rax, (%r8)		/* sw1wait: the new thread unblocked? */
	jne	2f
	pause
	jmp	1b
2:	movq	0(%rsi), %rsp
	popq	%rbp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbx
	ret
	.cfi_endproc
	.size	sc__cpu_switch, .-sc__cpu_switch

/*
 * A new thread's first switch "returns" here with the thread in %rbx.
 * %rbp is 0, so the walk of any of its stacks ends at this frame.
 */
	.globl	sc__fork_trampoline
	.hidden	sc__fork_trampoline
	.type	sc__fork_trampoline,@function
sc__fork_trampoline:
	.cfi_startproc
	.cfi_undefined rip
	xorl	%ebp, %ebp
	movq	%rbx, %rdi
	call	sc__fork_exit
	ud2
	.cfi_endproc
	.size	sc__fork_trampoline, .-sc__fork_trampoline

/*
 * void sc__user_enter(void (*fn)(void *), void *arg, void *stacktop);
 * Call fn(arg) on the user stack ending at stacktop (16-byte aligned), with
 * %rbp = 0, so that no frame record leads back into the kernel stack.
 */
	.globl	sc__user_enter
	.hidden	sc__user_enter
	.type	sc__user_enter,@function
sc__user_enter:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register rbp
	pushq	%rbx
	pushq	%r12
	movq	%rsp, %rbx
	movq	%rdx, %rsp
	movq	%rdi, %rax
	movq	%rsi, %rdi
	xorl	%ebp, %ebp
	call	*%rax
	movq	%rbx, %rsp
	popq	%r12
	popq	%rbx
	popq	%rbp
	.cfi_def_cfa rsp, 8
	ret
	.cfi_endproc
	.size	sc__user_enter, .-sc__user_enter

	.section .note.GNU-stack,"",@progbits
