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

/*
 * sc__timerint: the clock interrupt's frame on a preempted thread's kernel
 * stack (the kernel's Xtimerint and lapic_handle_timer(), whose
 * critical_exit() preempts).  Entered by the signal's return, which
 * kern_clock.c's sc__clock_intr_end() redirected here, with
 *   [rsp]     the interrupted %rip: this frame's return address, so that
 *             a walk through this frame reads the interrupted function
 *             and then the interrupted %rbp's chain
 *   [rsp + 8] the slot, just below the interrupted red zone, that holds
 *             the interrupted %rip again: "ret $128" from there lands on
 *             the interrupted %rsp
 * and every other register as interrupted.  Saves the caller-saved
 * registers, the flags and the FPU/SSE/AVX state (XSAVE with
 * sc__fpu_mask, FXSAVE when it is 0, in sc__fpu_len bytes, 64-aligned),
 * calls sc__sched_preempt() (the involuntary switch; the thread may come
 * back on another CPU), restores them all and returns to the interrupted
 * instruction.  The callee-saved registers are the C function's to keep.
 */
	.globl	sc__timerint
	.hidden	sc__timerint
	.type	sc__timerint,@function
sc__timerint:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register rbp
	pushfq
	pushq	%rax
	pushq	%rcx
	pushq	%rdx
	pushq	%rsi
	pushq	%rdi
	pushq	%r8
	pushq	%r9
	pushq	%r10
	pushq	%r11
	cld				/* the ABI's direction flag */
	subq	sc__fpu_len(%rip), %rsp
	andq	$-64, %rsp
	movq	sc__fpu_mask(%rip), %rax
	testq	%rax, %rax
	jz	1f
	movq	%rax, %rdx
	shrq	$32, %rdx
	xorl	%ecx, %ecx		/* XSAVE writes only XSTATE_BV of */
	movq	%rcx, 512(%rsp)		/* the header: zero the rest, */
	movq	%rcx, 520(%rsp)		/* which XRSTOR checks */
	movq	%rcx, 528(%rsp)
	movq	%rcx, 536(%rsp)
	movq	%rcx, 544(%rsp)
	movq	%rcx, 552(%rsp)
	movq	%rcx, 560(%rsp)
	movq	%rcx, 568(%rsp)
	xsave64	(%rsp)
	jmp	2f
1:	fxsave64 (%rsp)
2:	call	sc__sched_preempt
	movq	sc__fpu_mask(%rip), %rax
	testq	%rax, %rax
	jz	3f
	movq	%rax, %rdx
	shrq	$32, %rdx
	xrstor64 (%rsp)
	jmp	4f
3:	fxrstor64 (%rsp)
4:	leaq	-80(%rbp), %rsp
	popq	%r11
	popq	%r10
	popq	%r9
	popq	%r8
	popq	%rdi
	popq	%rsi
	popq	%rdx
	popq	%rcx
	popq	%rax
	popfq
	popq	%rbp
	.cfi_def_cfa rsp, 8
	movq	8(%rsp), %rsp		/* the slot below the red zone */
	ret	$128
	.cfi_endproc
	.size	sc__timerint, .-sc__timerint

	.section .note.GNU-stack,"",@progbits
