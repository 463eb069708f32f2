/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "elf-symbols.h"
#include "inject.h"
#include "memgov/parse-proc.h"

/* Where calls injected into one process go: its libc and its allocator's library, read from the
 * target's own copies (through /proc/PID/root, or map_files for a library replaced on disk),
 * and the places for the call stub and its mailbox. */
typedef struct InjectSite {
        pid_t pid;
        Allocator allocator;
        uint64_t stub_addr;    /* the unused tail of libc's executable segment */
        uint64_t mailbox_addr; /* the unused tail of libc's last writable page; 0 = none */
        size_t mailbox_room;   /* its bytes */
        MappedLib libs[2];     /* libc, then the allocator's library when it is not libc */
        uint8_t *images[2];
        size_t image_sizes[2];
        ElfInfo infos[2];
        unsigned n_libs;
} InjectSite;

int inject_site_open(pid_t pid, InjectSite *ret, char *why, size_t why_size);
void inject_site_done(InjectSite *s);

/* A function's address in the target, looked up in the allocator's library (libc for glibc's);
 * ret_library: the file it was found in. */
int inject_site_symbol(const InjectSite *s, const char *name, uint64_t *ret_addr, const char **ret_library, char *why,
                       size_t why_size);

/* inject_call, tried again a few times a few milliseconds apart while it says -EAGAIN (a thread
 * left its system call just as it was stopped, or none was blocked at that moment), unless the
 * thread was given. ret->tried counts the threads of every attempt. */
int inject_call_retrying(const InjectRequest *q, InjectReport *ret, char *why, size_t why_size);
