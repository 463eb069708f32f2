/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/PID/status: parse_proc_status(). The name is a bounded C string, values are in range,
 * and a parsed file printed back in the kernel's format parses to the same values. */
#include <inttypes.h>

#include "fuzz.h"
#include "memgov/parse-proc.h"
#include "memgov/strutil.h"

static bool status_eq(const ProcStatus *a, const ProcStatus *b) {
        return streq(a->name, b->name) && a->state == b->state && a->tgid == b->tgid && a->ppid == b->ppid &&
               a->tracer_pid == b->tracer_pid && a->nspid == b->nspid && a->ruid == b->ruid && a->euid == b->euid &&
               a->vm_rss == b->vm_rss && a->rss_anon == b->rss_anon && a->rss_file == b->rss_file &&
               a->rss_shmem == b->rss_shmem && a->vm_swap == b->vm_swap && a->threads == b->threads &&
               a->seccomp == b->seccomp && a->shadow_stack == b->shadow_stack && a->cap_seen == b->cap_seen &&
               memcmp(a->cap, b->cap, sizeof(a->cap)) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ProcStatus s, again;

        memset(&s, 0x77, sizeof(s));
        int r = parse_proc_status((const char *) data, size, &s);
        fuzz_assert(r == 0 || r == -EBADMSG || r == -ERANGE || r == -ENODATA);
        if (r < 0) {
                const uint8_t *b = (const uint8_t *) &s;
                for (size_t i = 0; i < sizeof(s); i++)
                        fuzz_assert(b[i] == 0x77);
                return 0;
        }
        fuzz_assert_string(s.name, sizeof(s.name));
        fuzz_assert(s.tgid >= 0 && s.ppid >= 0 && s.tracer_pid >= 0 && s.nspid >= 0);
        fuzz_assert(s.seccomp >= -1 && s.seccomp <= 2);
        fuzz_assert(s.vm_rss % 1024 == 0 && s.rss_anon % 1024 == 0 && s.rss_file % 1024 == 0 &&
                    s.rss_shmem % 1024 == 0 && s.vm_swap % 1024 == 0);

        char text[1024];
        StrBuf b;
        strbuf_init(&b, text, sizeof(text));
        strbuf_printf(&b, "Name:\t%s\nState:\t%c (x)\nTgid:\t%d\nNSpid:\t%d\nPPid:\t%d\nTracerPid:\t%d\n", s.name,
                      s.state, (int) s.tgid, (int) s.nspid, (int) s.ppid, (int) s.tracer_pid);
        strbuf_printf(&b, "Uid:\t%u\t%u\t%u\t%u\n", (unsigned) s.ruid, (unsigned) s.euid, (unsigned) s.euid,
                      (unsigned) s.euid);
        strbuf_printf(&b, "VmRSS:\t%8" PRIu64 " kB\nRssAnon:\t%8" PRIu64 " kB\nRssFile:\t%8" PRIu64 " kB\n",
                      s.vm_rss / 1024, s.rss_anon / 1024, s.rss_file / 1024);
        strbuf_printf(&b, "RssShmem:\t%8" PRIu64 " kB\nVmSwap:\t%8" PRIu64 " kB\nThreads:\t%u\n", s.rss_shmem / 1024,
                      s.vm_swap / 1024, s.threads);
        static const char *const keys[_CAP_SET_MAX] = { "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb" };
        for (CapSet c = 0; c < _CAP_SET_MAX; c++)
                if (s.cap_seen & (1u << c))
                        strbuf_printf(&b, "%s:\t%016" PRIx64 "\n", keys[c], s.cap[c]);
        if (s.seccomp >= 0)
                strbuf_printf(&b, "Seccomp:\t%d\n", s.seccomp);
        if (s.shadow_stack)
                strbuf_printf(&b, "x86_Thread_features:\twrss shstk\n");
        fuzz_assert(!b.truncated);
        size_t n = b.len;
        fuzz_assert(parse_proc_status(text, n, &again) == 0);
        fuzz_assert(status_eq(&s, &again));
        return 0;
}
