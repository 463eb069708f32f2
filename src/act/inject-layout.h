/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The data block an injected call uses, written on the chosen thread's own stack below its red
 * zone, and read by the stub (inject-stub.S). Offsets from the block's base, which is 64-byte
 * aligned (XSAVE needs it) and is the stack pointer when the stub starts. Shared with the
 * assembler: plain numbers only. */

#define INJECT_FN 0x00        /* function to call */
#define INJECT_ARG0 0x08      /* its first argument; the other five at INJECT_ARG1.. */
#define INJECT_RET 0x18       /* its return value, written by the stub */
#define INJECT_DONE 0x20      /* set to 1 by the stub once the call returned and state is restored */
#define INJECT_REGS_OFF 0x28  /* offset of the saved registers from the base */
#define INJECT_MAGIC 0x30     /* "memgov" marker, for anyone reading the stack */
#define INJECT_MAILBOX 0x10   /* address of the mailbox: two words, {sequence, return value} */
#define INJECT_SEQ 0x38       /* the sequence number the stub writes to the mailbox */
#define INJECT_ARG1 0x40      /* its second to sixth arguments, 8 bytes apart */
#define INJECT_XSAVE 0x80     /* XSAVE area: the thread's FPU/vector state */

/* The saved registers, in the order the stub pops them. */
#define INJECT_SAVED_RFLAGS 0
#define INJECT_SAVED_R9 1
#define INJECT_SAVED_R8 2
#define INJECT_SAVED_R10 3
#define INJECT_SAVED_RDX 4
#define INJECT_SAVED_RSI 5
#define INJECT_SAVED_RDI 6
#define INJECT_SAVED_RAX 7    /* the system call number to run again */
#define INJECT_SAVED_TARGET 8 /* the address of the syscall instruction (popped into rcx) */
#define INJECT_SAVED_RSP 9
#define INJECT_SAVED_COUNT 10
