/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/PID/net/unix: proc_net_unix_listening(), how the server's socket is found. The path is
 * absolute, NUL-terminated within the buffer (of several sizes, each exactly allocated), and
 * nothing is found among no sockets. */
#include "fuzz.h"
#include "memgov/parse-proc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const uint64_t inodes[] = { 23456, 1, 12345678, UINT64_MAX };
        static const size_t sizes[] = { 1, 16, 108, PATH_MAX };
        const char *buf = (const char *) data;
        char dummy[8];
        int found = 1;

        int r = proc_net_unix_listening(buf, size, inodes, 0, dummy, sizeof(dummy));
        fuzz_assert(r == -ENOENT || r == -EBADMSG);

        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                char *path = malloc(sizes[i]);
                if (!path)
                        abort();
                r = proc_net_unix_listening(buf, size, inodes, ELEMENTSOF(inodes), path, sizes[i]);
                fuzz_assert(r == 0 || r == -ENOENT || r == -EBADMSG || r == -ENAMETOOLONG);
                if (r == 0) {
                        fuzz_assert_string(path, sizes[i]);
                        fuzz_assert(path[0] == '/');
                        found = 0;
                } else if (r == -ENOENT || r == -EBADMSG)
                        /* Whether there is a socket does not depend on the room for its path. */
                        fuzz_assert(found != 0);
                free(path);
        }
        return 0;
}
