/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The code memgov copies into the target (into the unused tail of libc's executable segment)
 * and points one stopped thread at. It is data here: memgov never runs it itself.
 *
 * On entry: %rsp = the data block (inject-layout.h); every register but %rip and %rsp holds
 * the thread's own value; the system call the thread was blocked in was replaced by getpid.
 * It saves the vector state, calls the function, restores the vector state, the flags, the
 * system call's registers and the stack pointer, and jumps back to the syscall instruction,
 * which runs the interrupted call again. Callee-saved registers need no saving: the called
 * function preserves them. Nothing here needs the tracer: it may be gone already. */
#include "inject-layout.h"

        .section .rodata
        .globl memgov_inject_stub_start
        .globl memgov_inject_stub_end
memgov_inject_stub_start:
        or      $-1, %eax
        or      $-1, %edx
        xsave64 INJECT_XSAVE(%rsp)
        mov     INJECT_ARG0(%rsp), %rdi
        mov     INJECT_ARG1(%rsp), %rsi
        mov     INJECT_ARG1+8(%rsp), %rdx
        mov     INJECT_ARG1+16(%rsp), %rcx
        mov     INJECT_ARG1+24(%rsp), %r8
        mov     INJECT_ARG1+32(%rsp), %r9
        call    *INJECT_FN(%rsp)
        mov     %rax, INJECT_RET(%rsp)
        /* Tell memgov the call returned, in a mailbox off the stack: once the system call below
         * returns, the thread may reuse this stack before anyone read it. The value first, then
         * the sequence number that says it is there. */
        mov     INJECT_MAILBOX(%rsp), %rcx
        mov     %rax, 8(%rcx)
        mov     INJECT_SEQ(%rsp), %rax
        mov     %rax, (%rcx)
        or      $-1, %eax
        or      $-1, %edx
        xrstor64 INJECT_XSAVE(%rsp)
        movq    $1, INJECT_DONE(%rsp)
        add     INJECT_REGS_OFF(%rsp), %rsp
        popfq
        pop     %r9
        pop     %r8
        pop     %r10
        pop     %rdx
        pop     %rsi
        pop     %rdi
        pop     %rax
        pop     %rcx
        pop     %rsp
        jmp     *%rcx
memgov_inject_stub_end:
        .section .note.GNU-stack,"",@progbits
