/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/PID/stat: parse_proc_stat(). comm may hold anything, ')' included; a parsed line printed
 * back in the kernel's format parses to the same values. */
#include <inttypes.h>

#include "fuzz.h"
#include "memgov/parse-proc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ProcStat s, again;

        memset(&s, 0x22, sizeof(s));
        int r = parse_proc_stat((const char *) data, size, &s);
        fuzz_assert(r == 0 || r == -EBADMSG);
        if (r < 0) {
                const uint8_t *b = (const uint8_t *) &s;
                for (size_t i = 0; i < sizeof(s); i++)
                        fuzz_assert(b[i] == 0x22);
                return 0;
        }
        fuzz_assert(s.ppid >= 0);
        fuzz_assert(s.state != ' ' && s.state != '\n' && s.state != '\0');

        char text[512];
        int n = snprintf(text, sizeof(text),
                         "4242 (my (odd) comm) %c %d 4242 4242 0 -1 4194560 53191 0 0 0 %" PRIu64 " %" PRIu64
                         " 0 0 20 0 39 0 %" PRIu64 " 2147483648 100000 18446744073709551615\n",
                         s.state, (int) s.ppid, s.utime, s.stime, s.starttime);
        fuzz_assert(n > 0 && (size_t) n < sizeof(text));
        fuzz_assert(parse_proc_stat(text, (size_t) n, &again) == 0);
        fuzz_assert(again.state == s.state && again.ppid == s.ppid && again.utime == s.utime &&
                    again.stime == s.stime && again.starttime == s.starttime);
        return 0;
}
