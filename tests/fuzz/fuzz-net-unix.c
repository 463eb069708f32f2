/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The unix sockets of a network namespace, as sock_diag dumps them: unix_diag_parse(), how the
 * server's socket is found. Whatever the bytes, a socket found is one of the inodes asked for,
 * its path absolute and NUL-terminated within its room, and nothing is found among no inodes. */
#include "fuzz.h"
#include "memgov/unix-diag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* The inodes of tests/data/unix-diag/sockets.txt, which the seed corpus comes from. */
        static const uint64_t inodes[] = { 43907, 43908, 43909, 43910, 1, UINT32_MAX };
        UnixDiagSocket s = {};

        int r = unix_diag_parse(data, size, inodes, 0, &s);
        fuzz_assert(r == 0 || r == 1 || (r < 0 && r > -4096));
        fuzz_assert(!s.found);

        s = (UnixDiagSocket) {};
        int again = unix_diag_parse(data, size, inodes, ELEMENTSOF(inodes), &s);
        /* Where the dump ends or breaks does not depend on the inodes looked for. */
        fuzz_assert(again == r);
        if (s.found) {
                fuzz_assert_string(s.path, sizeof(s.path));
                fuzz_assert(s.path[0] == '/');
                bool asked = false;
                for (size_t i = 0; i < ELEMENTSOF(inodes); i++)
                        asked = asked || inodes[i] == s.inode;
                fuzz_assert(asked);
        }
        return 0;
}
