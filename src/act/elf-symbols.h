/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/macro.h"

/* Facts about a shared object, read with libelf from its file (the target's own copy, opened
 * through /proc/PID/root or /proc/PID/map_files): where a dynamic symbol is, and how much room
 * the executable segment leaves unused at the end of its last page. Offsets are relative to the
 * object's load base. */

typedef struct ElfInfo {
        uint64_t first_load_vaddr; /* p_vaddr of the first PT_LOAD (usually 0) */
        uint64_t exec_end;         /* end of the executable PT_LOAD's contents */
        uint64_t exec_page_end;    /* end of its last page */
        uint64_t rw_end;           /* end of the writable PT_LOAD's memory (its .bss) */
        uint64_t rw_page_end;      /* end of its last page: unused, writable */
} ElfInfo;

int elf_read_info(int fd, ElfInfo *ret);
/* A defined function in .dynsym (then .symtab): -ENOENT when absent. */
int elf_find_symbol(int fd, const char *name, uint64_t *ret_offset);
