/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The ELF reader of the trim (src/act/elf-symbols.c) over an image in memory: the target's own
 * libc or allocator library, which the target may have replaced with anything. */
#include "../../src/act/elf-symbols.h"
#include "fuzz.h"

/* libelf may rewrite the image in place: each call gets a fresh copy of exactly the input. */
static uint8_t *copy(const uint8_t *data, size_t size) {
        return (uint8_t *) fuzz_memdup((const char *) data, size);
}

static void check_symbol(const uint8_t *data, size_t size, const char *name) {
        uint64_t off = 0;
        uint8_t *image = copy(data, size);
        int r = elf_find_symbol(image, size, name, &off);
        fuzz_assert(r == 0 || r == -ENOENT || r == -EBADMSG || r == -EMEDIUMTYPE);
        if (r == 0)
                fuzz_assert(off != 0);
        free(image);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ElfInfo info;
        uint8_t *image = copy(data, size);

        memset(&info, 0xa5, sizeof(info));
        int r = elf_read_info(image, size, &info);
        fuzz_assert(r == 0 || r == -EBADMSG || r == -EMEDIUMTYPE || r == -ENOEXEC);
        if (r == 0) {
                /* Segment ends and the ends of their last pages: page aligned, never before. */
                fuzz_assert(info.exec_end != 0);
                fuzz_assert(info.exec_end <= info.exec_page_end && info.exec_page_end % 4096 == 0);
                fuzz_assert(info.exec_page_end - info.exec_end < 4096);
                fuzz_assert(info.rw_end <= info.rw_page_end && info.rw_page_end % 4096 == 0);
        }
        free(image);

        check_symbol(data, size, "malloc_trim");
        check_symbol(data, size, "mallctl");
        check_symbol(data, size, "");
        return 0;
}
