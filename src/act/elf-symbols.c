/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "elf-symbols.h"

static int open_elf(int fd, Elf **ret) {
        if (elf_version(EV_CURRENT) == EV_NONE)
                return -ENOSYS;
        Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!e)
                return -EBADMSG;
        GElf_Ehdr eh;
        if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) || eh.e_machine != EM_X86_64) {
                elf_end(e);
                return -EMEDIUMTYPE;
        }
        *ret = e;
        return 0;
}

int elf_read_info(int fd, ElfInfo *ret) {
        Elf *e;
        size_t n;
        int r = open_elf(fd, &e);
        bool first = true;

        if (r < 0)
                return r;
        *ret = (ElfInfo) {};
        if (elf_getphdrnum(e, &n) != 0) {
                elf_end(e);
                return -EBADMSG;
        }
        for (size_t i = 0; i < n; i++) {
                GElf_Phdr ph;
                if (!gelf_getphdr(e, (int) i, &ph) || ph.p_type != PT_LOAD)
                        continue;
                if (first) {
                        ret->first_load_vaddr = ph.p_vaddr;
                        first = false;
                }
                /* A mapping ends at a page boundary: what lies beyond the segment's contents up to
                 * it is mapped with the segment's permissions, and nothing uses it. */
                uint64_t end = ph.p_vaddr + ph.p_memsz, page_end = (end + 4095) / 4096 * 4096;
                if (ph.p_flags & PF_X) {
                        ret->exec_end = end;
                        ret->exec_page_end = page_end;
                } else if (ph.p_flags & PF_W) {
                        ret->rw_end = end;
                        ret->rw_page_end = page_end;
                }
        }
        elf_end(e);
        return ret->exec_end ? 0 : -ENOEXEC;
}

static int search(Elf *e, Elf64_Word type, const char *name, uint64_t *ret) {
        Elf_Scn *scn = NULL;
        while ((scn = elf_nextscn(e, scn))) {
                GElf_Shdr sh;
                if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || sh.sh_entsize == 0)
                        continue;
                Elf_Data *data = elf_getdata(scn, NULL);
                if (!data)
                        continue;
                size_t count = sh.sh_size / sh.sh_entsize;
                for (size_t i = 0; i < count; i++) {
                        GElf_Sym sym;
                        if (!gelf_getsym(data, (int) i, &sym) || sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
                                continue;
                        /* An IFUNC address is its resolver, not the function. */
                        if (GELF_ST_TYPE(sym.st_info) != STT_FUNC)
                                continue;
                        const char *s = elf_strptr(e, sh.sh_link, sym.st_name);
                        if (s && streq(s, name)) {
                                *ret = sym.st_value;
                                return 0;
                        }
                }
        }
        return -ENOENT;
}

int elf_find_symbol(int fd, const char *name, uint64_t *ret_offset) {
        Elf *e;
        int r = open_elf(fd, &e);
        if (r < 0)
                return r;
        r = search(e, SHT_DYNSYM, name, ret_offset);
        if (r == -ENOENT)
                r = search(e, SHT_SYMTAB, name, ret_offset);
        elf_end(e);
        return r;
}
