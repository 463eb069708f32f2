/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/macro.h"

/* Facts about a shared object, read with libelf from a private copy of its file in memory (the
 * target's own copy, opened through /proc/PID/root or /proc/PID/map_files): where a dynamic
 * symbol is, and how much room the executable segment leaves unused at the end of its last page.
 * Offsets are relative to the object's load base. The file is the target's and may be hostile:
 * it is never mapped (the target could truncate it under memgov), and the functions refuse what
 * does not add up (-EBADMSG, -EMEDIUMTYPE for another format or machine). */

/* The largest image read: libc is about 2 MiB. */
#define ELF_IMAGE_MAX ((size_t) 64 << 20)

typedef struct ElfInfo {
        uint64_t first_load_vaddr; /* p_vaddr of the first PT_LOAD (usually 0) */
        uint64_t exec_end;         /* end of the executable PT_LOAD's contents */
        uint64_t exec_page_end;    /* end of its last page */
        uint64_t rw_end;           /* end of the writable PT_LOAD's memory (its .bss) */
        uint64_t rw_page_end;      /* end of its last page: unused, writable */
} ElfInfo;

/* image is memgov's own writable copy (libelf may convert it in place). */
int elf_read_info(void *image, size_t size, ElfInfo *ret);
/* A defined function in .dynsym (then .symtab): -ENOENT when absent. */
int elf_find_symbol(void *image, size_t size, const char *name, uint64_t *ret_offset);
