/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "elf-symbols.h"

/* The file is the target's: every count, index and size in it is checked before use. libelf
 * itself keeps section and segment tables within the image (elf_memory() refuses an image
 * whose headers point past its end, gelf_get*() refuse indexes past a table). */
static int open_elf(void *image, size_t size, Elf **ret) {
        if (!image || size < sizeof(Elf64_Ehdr) || size > ELF_IMAGE_MAX)
                return -EBADMSG;
        const unsigned char *ident = image;
        if (memcmp(ident, ELFMAG, SELFMAG) != 0 || ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB)
                return -EMEDIUMTYPE;
        if (elf_version(EV_CURRENT) == EV_NONE)
                return -ENOSYS;
        /* The image is memgov's own private copy: libelf may rewrite it in place, and nobody
         * else can change it while it is read. */
        Elf *e = elf_memory(image, size);
        if (!e)
                return -EBADMSG;
        GElf_Ehdr eh;
        if (elf_kind(e) != ELF_K_ELF || gelf_getclass(e) != ELFCLASS64 || !gelf_getehdr(e, &eh) ||
            eh.e_machine != EM_X86_64) {
                elf_end(e);
                return -EMEDIUMTYPE;
        }
        *ret = e;
        return 0;
}

int elf_read_info(void *image, size_t size, ElfInfo *ret) {
        assert(ret);
        Elf *e;
        size_t n;
        int r = open_elf(image, size, &e);
        bool first = true;

        if (r < 0)
                return r;
        *ret = (ElfInfo) {};
        if (elf_getphdrnum(e, &n) != 0 || n > size / sizeof(Elf64_Phdr)) {
                elf_end(e);
                return -EBADMSG;
        }
        for (size_t i = 0; i < n; i++) {
                GElf_Phdr ph;
                uint64_t end, page_end;
                if (!gelf_getphdr(e, (int) i, &ph) || ph.p_type != PT_LOAD)
                        continue;
                /* A segment that wraps around the address space is no segment. */
                if (__builtin_add_overflow(ph.p_vaddr, ph.p_memsz, &end) ||
                    __builtin_add_overflow(end, (uint64_t) 4095, &page_end)) {
                        elf_end(e);
                        return -EBADMSG;
                }
                if (first) {
                        ret->first_load_vaddr = ph.p_vaddr;
                        first = false;
                }
                /* A mapping ends at a page boundary: what lies beyond the segment's contents up to
                 * it is mapped with the segment's permissions, and nothing uses it. */
                page_end &= ~(uint64_t) 4095;
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
        size_t shnum;

        if (elf_getshdrnum(e, &shnum) != 0)
                return -EBADMSG;
        while ((scn = elf_nextscn(e, scn))) {
                GElf_Shdr sh, strsh;
                if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || sh.sh_entsize != sizeof(Elf64_Sym))
                        continue;
                /* Names come from the string table the section links to, and only from one. */
                Elf_Scn *strscn = sh.sh_link > 0 && sh.sh_link < shnum ? elf_getscn(e, sh.sh_link) : NULL;
                if (!strscn || !gelf_getshdr(strscn, &strsh) || strsh.sh_type != SHT_STRTAB)
                        continue;
                Elf_Data *data = elf_getdata(scn, NULL);
                if (!data || !data->d_buf)
                        continue;
                /* What libelf hands back lies within the image: count from it, not from sh_size. */
                size_t count = data->d_size / sizeof(Elf64_Sym);
                for (size_t i = 0; i < count && i <= INT32_MAX; i++) {
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

int elf_find_symbol(void *image, size_t size, const char *name, uint64_t *ret_offset) {
        assert(name);
        assert(ret_offset);
        Elf *e;
        int r = open_elf(image, size, &e);
        if (r < 0)
                return r;
        r = search(e, SHT_DYNSYM, name, ret_offset);
        if (r == -ENOENT)
                r = search(e, SHT_SYMTAB, name, ret_offset);
        elf_end(e);
        return r;
}
