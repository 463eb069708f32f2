/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "memgov/server-candidate.h"
#include "memgov/strutil.h"


bool server_candidate_ok(const CandidateFacts *f, char *why, size_t why_size) {
        /* A copy of the server's binary planted by a user is that user's, or writable by them. */
        if (f->enforce) {
                if (!f->exe_known) {
                        snprintf(why, why_size, "its executable cannot be looked at");
                        return false;
                }
                /* The name a process shows is the one it was started by: a symbolic link named
                 * mariadbd to any root-owned binary. The binary itself must carry the name (a
                 * user cannot make a hard link to root's files: fs.protected_hardlinks). */
                if (f->exe_name && f->names && !name_in_list(f->exe_name, f->names)) {
                        snprintf(why, why_size, "its executable is %s, not a server", f->exe_name);
                        return false;
                }
                if (f->exe_uid != 0) {
                        snprintf(why, why_size, "its executable belongs to uid %u, not root", (unsigned) f->exe_uid);
                        return false;
                }
                if (f->exe_mode & (S_IWGRP | S_IWOTH)) {
                        snprintf(why, why_size, "its executable is writable by %s",
                                 (f->exe_mode & S_IWOTH) ? "everyone" : "its group");
                        return false;
                }
        }
        /* Debian's own binary started by a user is still that user's process: on a host, a server
         * runs as root or a system account, in a service's cgroup, not in a login session's. */
        if (f->all_users) {
                /* Where the servers' account exists, a server runs as it or as root; elsewhere as
                 * a system account at least, never as a login user or nobody. */
                if (f->server_uid != (uid_t) -1 && f->ruid != 0 && f->ruid != f->server_uid) {
                        snprintf(why, why_size, "it runs as uid %u, neither root nor the servers' account (uid %u)",
                                 (unsigned) f->ruid, (unsigned) f->server_uid);
                        return false;
                }
                if (f->ruid >= f->uid_min) {
                        snprintf(why, why_size, "it runs as uid %u, a login user's (UID_MIN %u)", (unsigned) f->ruid,
                                 (unsigned) f->uid_min);
                        return false;
                }
                if (f->cgroup && (strncmp(f->cgroup, "/user.slice/", 12) == 0 || strcmp(f->cgroup, "/user.slice") == 0)) {
                        snprintf(why, why_size, "it runs in a login session (cgroup %s)", f->cgroup);
                        return false;
                }
        }
        return true;
}

uid_t login_defs_uid_min(const char *text, size_t len) {
        const char *end = text + len;
        for (const char *line = text; line < end;) {
                const char *nl = memchr(line, '\n', (size_t) (end - line));
                size_t n = nl ? (size_t) (nl - line) : (size_t) (end - line);
                while (n > 0 && (*line == ' ' || *line == '\t')) {
                        line++;
                        n--;
                }
                if (n > 7 && strncmp(line, "UID_MIN", 7) == 0 && (line[7] == ' ' || line[7] == '\t')) {
                        char num[24];
                        size_t k = 0;
                        const char *p = line + 7;
                        while (p < line + n && (*p == ' ' || *p == '\t'))
                                p++;
                        while (p < line + n && *p >= '0' && *p <= '9' && k + 1 < sizeof(num))
                                num[k++] = *p++;
                        num[k] = '\0';
                        if (k > 0 && k < 10)
                                return (uid_t) strtoul(num, NULL, 10);
                }
                line += n + (nl ? 1 : 0);
        }
        return 1000;
}
