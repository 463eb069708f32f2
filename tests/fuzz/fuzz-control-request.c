/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The control socket's request: control_parse_request() on what a client sends, cut as the daemon
 * reads it (one recv() of at most 127 bytes). A status request is exactly one that starts with
 * "status"; the answer depends on the bytes given and nothing past them. */
#include "control.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        size_t n = MIN(size, (size_t) 127);
        /* Exactly n bytes, as on_connection() has them (it adds a NUL the parser must not need). */
        char *req = fuzz_memdup((const char *) data, n);

        ControlRequest r = control_parse_request(req, n);
        fuzz_assert(r == CONTROL_REQUEST_STATUS || r == CONTROL_REQUEST_UNKNOWN);
        fuzz_assert((r == CONTROL_REQUEST_STATUS) == (n >= 6 && memcmp(req, "status", 6) == 0));
        /* A prefix is never more of a request than the whole. */
        if (r == CONTROL_REQUEST_UNKNOWN)
                for (size_t k = 0; k < n; k++)
                        fuzz_assert(control_parse_request(req, k) == CONTROL_REQUEST_UNKNOWN);
        free(req);
        return 0;
}
