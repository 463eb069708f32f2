/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memgov/fileio.h"
#include "memgov/policy-file.h"

#define POLICY_FILE_MAX (1U << 20)

/* "PATH: WHAT: DETAIL" */
static void say(policy_report_t report, void *userdata, const char *path, const char *what, const char *detail) {
        char msg[1024];
        snprintf(msg, sizeof(msg), "%s: %s: %s", path, what, detail);
        if (report)
                report(userdata, msg);
}

int policy_load_file(const char *path, Policy *p, policy_report_t report, void *userdata) {
        assert(path);
        assert(p);
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int fd = -1;
        struct stat st;
        char why[256];
        size_t len;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                r = negative_errno();
                say(report, userdata, path, "cannot open", strerror(-r));
                return r;
        }
        if (fstat(fd, &st) < 0) {
                r = negative_errno();
                say(report, userdata, path, "cannot stat", strerror(-r));
                return r;
        }
        /* Checked on the open file, so a rename in between cannot swap it. */
        r = check_trusted_file(&st, geteuid(), why, sizeof(why));
        if (r < 0) {
                say(report, userdata, path, "refused", why);
                return r;
        }
        r = read_full_fd(fd, POLICY_FILE_MAX, &text, &len);
        if (r < 0) {
                say(report, userdata, path, "cannot read",
                    r == -EFBIG ? "larger than 1M, not a policy file" : strerror(-r));
                return r;
        }
        return policy_parse(p, text, len, path, report, userdata);
}
