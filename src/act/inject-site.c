/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "memgov/clock.h"
#include "inject-site.h"
#include "memgov/fileio.h"
#include "memgov/maps-reader.h"
#include "memgov/strutil.h"
#include "memgov/target.h"

/* Whether a copy of a file holds what the target has mapped at lib->base: the mapping at file
 * offset 0 is read-only and never relocated, so the bytes in the target's memory are the file's.
 * Needed where /proc/PID/maps and stat(2) disagree on the inode (an overlayfs root, as in most
 * containers). */
static bool same_content(pid_t pid, const uint8_t *image, size_t size, const MappedLib *lib) {
        static uint8_t theirs[65536];
        uint64_t len = MIN(lib->base_end - lib->base, (uint64_t) 2 << 20);

        if (len == 0 || len > size)
                return false;
        for (uint64_t off = 0; off < len; off += sizeof(theirs)) {
                size_t n = (size_t) MIN(len - off, (uint64_t) sizeof(theirs));
                struct iovec local = { theirs, n }, remote = { (void *) (uintptr_t) (lib->base + off), n };
                if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t) n || memcmp(image + off, theirs, n) != 0)
                        return false;
        }
        return true;
}


/* The whole file, read into memory: libelf then parses a private copy that the target cannot
 * change or truncate under memgov (a mapped file truncated meanwhile would be SIGBUS). O_NONBLOCK
 * and the S_ISREG check keep a FIFO or a device from blocking memgov's worker. */
static int read_image(int fd, const char *name, uint8_t **ret, size_t *ret_size, struct stat *ret_st, char *why,
                      size_t why_size) {
        struct stat st;
        if (fstat(fd, &st) < 0) {
                int r = negative_errno();
                snprintf(why, why_size, "%s: %s", name, strerror(-r));
                return r;
        }
        if (!S_ISREG(st.st_mode)) {
                snprintf(why, why_size, "%s is not a regular file: not read", name);
                return -ENOEXEC;
        }
        if (st.st_size <= 0 || (uint64_t) st.st_size > ELF_IMAGE_MAX) {
                snprintf(why, why_size, "%s: size %lld is not that of a shared library (at most %zu MiB)", name,
                         (long long) st.st_size, ELF_IMAGE_MAX >> 20);
                return -EFBIG;
        }
        size_t size = (size_t) st.st_size, got = 0;
        _cleanup_free_ uint8_t *image = malloc(size);
        if (!image)
                return -ENOMEM;
        while (got < size) {
                ssize_t k = pread(fd, image + got, size - got, (off_t) got);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        int r = negative_errno();
                        snprintf(why, why_size, "cannot read %s: %s", name, strerror(-r));
                        return r;
                }
                if (k == 0) {
                        snprintf(why, why_size, "%s shrank while it was read", name);
                        return -ESTALE;
                }
                got += (size_t) k;
        }
        *ret = TAKE_PTR(image);
        *ret_size = size;
        *ret_st = st;
        return 0;
}

/* /proc/PID/maps names a file from the reader's root. Where the target's root is a directory
 * below memgov's (a chroot, a unit's RootDirectory=), the names start with that directory (what
 * /proc/PID/root reads as): they are made names within the target's root again. Where the root
 * is memgov's, or one memgov cannot reach (a container's own), /proc/PID/root reads as "/" and
 * the names are the target's own. */
static const char *path_in_root(pid_t pid, const char *path, char *buf, size_t size) {
        char link[64];
        snprintf(link, sizeof(link), "/proc/%d/root", (int) pid);
        ssize_t k = readlink(link, buf, size - 1);
        if (k <= 0)
                return path;
        buf[k] = '\0';
        const char *below = path_below(buf, path);
        return below ? below : path;
}

/* Opens a file for reading only once it is known to be a regular file: an O_PATH descriptor
 * first (opening nothing), then the very inode it pins. A device node put where the target maps
 * its library is never opened (a device's open has effects: /dev/watchdog opened and closed
 * without its magic close arms a reboot), a FIFO never blocks. -ENOEXEC for a file that is not a
 * regular one: something is being played on memgov. */
static int open_regular(int pathfd, const char *name, char *why, size_t why_size) {
        int fd = reopen_regular(pathfd, O_RDONLY | O_NONBLOCK, NULL);
        if (fd == -EBADFD) {
                snprintf(why, why_size, "%s is not a regular file: not opened", name);
                return -ENOEXEC;
        }
        if (fd < 0)
                snprintf(why, why_size, "cannot open %s: %s", name, strerror(-fd));
        return fd;
}

/* Reads the target's own copy of a library: by path within its root (the very file mapped:
 * same inode, else same content), else through map_files (a library replaced on disk since it
 * was mapped, or whose path the maps cannot give exactly; that needs CAP_SYS_ADMIN or
 * CAP_CHECKPOINT_RESTORE). */
static int load_lib(pid_t pid, const MappedLib *lib, uint8_t **ret, size_t *ret_size, char *why, size_t why_size) {
        char path[PATH_MAX + 64], root[PATH_MAX];
        struct stat st;
        int r;

        if (!lib->deleted && !lib->path_unclear) {
                const char *inside = path_in_root(pid, lib->path, root, sizeof(root));
                snprintf(path, sizeof(path), "%s in the root of process %d", inside, (int) pid);
                _cleanup_close_ int pathfd = open_in_process_root(pid, inside, O_PATH);
                _cleanup_close_ int fd = pathfd >= 0 ? open_regular(pathfd, path, why, why_size) : -1;
                /* Not a regular file where the target maps its libc: stop here rather than look
                 * elsewhere. */
                if (fd == -ENOEXEC)
                        return fd;
                if (fd >= 0) {
                        _cleanup_free_ uint8_t *image = NULL;
                        size_t size;
                        r = read_image(fd, path, &image, &size, &st, why, why_size);
                        if (r == -ENOEXEC)
                                return r;
                        if (r >= 0 && ((st.st_ino == lib->inode && major(st.st_dev) == lib->dev_major &&
                                        minor(st.st_dev) == lib->dev_minor) ||
                                       same_content(pid, image, size, lib))) {
                                *ret = TAKE_PTR(image);
                                *ret_size = size;
                                return 0;
                        }
                }
        }
        snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int) pid, (unsigned long long) lib->base,
                 (unsigned long long) lib->base_end);
        _cleanup_close_ int pathfd = open(path, O_PATH | O_CLOEXEC);
        if (pathfd < 0) {
                r = negative_errno();
                snprintf(why, why_size, "cannot open the target's own %s: %s%s", lib->path, strerror(-r),
                         r != -EPERM              ? ""
                         : lib->path_unclear      ? " (its path in /proc/PID/maps holds \"\\012\", a newline or those "
                                                    "characters: the file is reached only through map_files, which "
                                                    "needs CAP_CHECKPOINT_RESTORE)"
                         : lib->deleted           ? " (the library was replaced on disk since the server started: "
                                                    "restart the server, or give memgov CAP_CHECKPOINT_RESTORE)"
                                                  : "");
                return r;
        }
        _cleanup_close_ int fd = open_regular(pathfd, path, why, why_size);
        if (fd < 0)
                return fd;
        return read_image(fd, path, ret, ret_size, &st, why, why_size);
}

static uint64_t load_bias(const MappedLib *lib, const ElfInfo *info) {
        return lib->base - (info->first_load_vaddr & ~(uint64_t) 4095);
}

int inject_site_open(pid_t pid, InjectSite *ret, char *why, size_t why_size) {
        assert(ret);
        assert(why);
        ProcMaps m;
        int r;

        *ret = (InjectSite) { .pid = pid };
        r = maps_read_summary(AT_FDCWD, pid, &m);
        if (r < 0) {
                snprintf(why, why_size, "/proc/%d/maps: %s", (int) pid,
                         r == -E2BIG ? "a line longer than memgov reads" : r == -EBADMSG || r == -ENODATA ?
                         "unexpected contents" : strerror(-r));
                return r == -ENOENT ? -ESRCH : r;
        }
        if (!m.libc.found) {
                snprintf(why, why_size, "process %d has no glibc mapped (a static or musl build?): no known allocator",
                         (int) pid);
                return -EOPNOTSUPP;
        }
        ret->allocator = m.allocator;
        ret->libs[0] = m.libc;
        ret->libs[1] = m.allocator_lib;
        unsigned n = m.allocator != ALLOCATOR_GLIBC && m.allocator_lib.found ? 2 : 1;
        for (unsigned i = 0; i < n; i++) {
                if ((r = load_lib(pid, &ret->libs[i], &ret->images[i], &ret->image_sizes[i], why, why_size)) < 0)
                        return r;
                ret->n_libs = i + 1;
                if ((r = elf_read_info(ret->images[i], ret->image_sizes[i], &ret->infos[i])) < 0) {
                        snprintf(why, why_size, "%s: not a readable x86-64 ELF file", ret->libs[i].path);
                        return r;
                }
        }

        /* The stub goes in the unused tail of libc's executable segment. Sums that wrap are
         * refused: the file's figures are the target's. */
        const ElfInfo *libc_info = &ret->infos[0];
        size_t stub_size;
        (void) inject_stub(&stub_size);
        uint64_t bias = load_bias(&m.libc, libc_info);
        uint64_t stub = bias + ((libc_info->exec_end + 63) & ~(uint64_t) 63);
        uint64_t start, end;
        char perms[5];
        if (libc_info->exec_end > UINT64_MAX - 63 || stub < bias || stub + stub_size < stub ||
            stub + stub_size > bias + libc_info->exec_page_end ||
            maps_read_find(AT_FDCWD, pid, stub, &start, &end, perms) < 0 || perms[2] != 'x' || stub + stub_size > end) {
                snprintf(why, why_size, "no room for the call stub after libc's code in process %d", (int) pid);
                return -ENOSPC;
        }
        ret->stub_addr = stub;

        /* The mailbox: the unused tail of libc's last writable page (after its .bss). */
        uint64_t box = bias + ((libc_info->rw_end + 15) & ~(uint64_t) 15);
        if (libc_info->rw_end && libc_info->rw_end <= UINT64_MAX - 15 && box >= bias && box + 16 > box &&
            box + 16 <= bias + libc_info->rw_page_end && maps_read_find(AT_FDCWD, pid, box, &start, &end, perms) == 0 &&
            perms[0] == 'r' && perms[1] == 'w' && box + 16 <= end) {
                ret->mailbox_addr = box;
                ret->mailbox_room = (size_t) (MIN(bias + libc_info->rw_page_end, end) - box);
        }
        return 0;
}

void inject_site_done(InjectSite *s) {
        for (unsigned i = 0; i < ELEMENTSOF(s->images); i++) {
                free(s->images[i]);
                s->images[i] = NULL;
        }
}

int inject_site_symbol(const InjectSite *s, const char *name, uint64_t *ret_addr, const char **ret_library, char *why,
                       size_t why_size) {
        assert(s->n_libs > 0);
        unsigned i = s->n_libs - 1;
        uint64_t off;
        int r = elf_find_symbol(s->images[i], s->image_sizes[i], name, &off);
        if (r < 0) {
                snprintf(why, why_size, "%s has no %s", s->libs[i].path, name);
                return r;
        }
        *ret_addr = load_bias(&s->libs[i], &s->infos[i]) + off;
        if (ret_library)
                *ret_library = s->libs[i].path;
        return 0;
}

int inject_call_retrying(const InjectRequest *q, InjectReport *ret, char *why, size_t why_size) {
        unsigned tried = 0;
        for (unsigned attempt = 0;; attempt++) {
                int r = inject_call(q, ret, why, why_size);
                tried += ret->tried;
                ret->tried = tried;
                if (r != -EAGAIN || q->tid > 0 || attempt >= 9)
                        return r;
                sleep_usec(3 * USEC_PER_MSEC);
        }
}
