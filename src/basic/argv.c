/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <string.h>

#include "memgov/argv.h"

int argv_split(const char *s, char *buf, size_t buf_size, char *ret_argv[static ARGV_MAX + 1], unsigned *ret_n) {
        assert(s);
        assert(buf);
        assert(ret_argv);
        assert(ret_n);
        size_t o = 0;
        unsigned n = 0;

        for (;;) {
                while (*s == ' ' || *s == '\t')
                        s++;
                if (!*s)
                        break;
                if (n == ARGV_MAX)
                        return -E2BIG;
                ret_argv[n++] = buf + o;
                bool quoted = false;
                while (*s && (quoted || (*s != ' ' && *s != '\t'))) {
                        char ch = *s++;
                        if (ch == '"') {
                                quoted = !quoted;
                                continue;
                        }
                        if (quoted && ch == '\\' && (*s == '"' || *s == '\\'))
                                ch = *s++;
                        if (o + 1 >= buf_size)
                                return -E2BIG;
                        buf[o++] = ch;
                }
                if (quoted)
                        return -EINVAL;
                if (o + 1 >= buf_size)
                        return -E2BIG;
                buf[o++] = '\0';
        }
        ret_argv[n] = NULL;
        if (n > 0 && ret_argv[0][0] != '/')
                return -EINVAL;
        *ret_n = n;
        return 0;
}
