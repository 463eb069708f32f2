/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The other side of the control socket: what `memgov status` does with the daemon's reply,
 * status_reply_parse() then print_status(), on any bytes (another program on the socket, another
 * memgov version, a truncated reply). A refusal's message is a bounded string; the printed text
 * holds no NUL and starts with the "memgov" title line. */
#include "cli.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* fetch() reads at most 65535 bytes and terminates them. */
        size_t n = MIN(size, (size_t) 65535);
        char *buf = fuzz_strndup(data, n);
        char error[64];
        json_object *st = NULL;

        memset(error, 'x', sizeof(error));
        int r = status_reply_parse(buf, &st, error, sizeof(error));
        fuzz_assert(r == 0 || r == -EACCES || r == -EBADMSG);
        if (r == -EACCES)
                fuzz_assert_string(error, sizeof(error));
        if (r < 0) {
                fuzz_assert(!st);
                free(buf);
                return 0;
        }
        fuzz_assert(st);

        /* Printed into memory instead of the terminal. */
        char *out = NULL;
        size_t out_len = 0;
        FILE *saved = stdout, *f = open_memstream(&out, &out_len);
        if (!f)
                abort();
        stdout = f;
        print_status(st, n % 2 == 1, n % 3 == 0 ? "  (no daemon: a one-shot snapshot)" : NULL);
        fflush(f);
        stdout = saved;
        fclose(f);
        fuzz_assert(out);
        fuzz_assert(strlen(out) == out_len);
        fuzz_assert(strncmp(out, "memgov", 6) == 0 || strncmp(out, "\033[1mmemgov", 10) == 0);
        free(out);
        json_object_put(st);
        free(buf);
        return 0;
}
