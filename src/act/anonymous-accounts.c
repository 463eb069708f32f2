/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <stdio.h>

#include "anonymous-accounts.h"
#include "memgov/strutil.h"

typedef struct Found {
        StrBuf list;
        int n;
} Found;

static int add_host(void *userdata, unsigned n, char **row) {
        Found *f = userdata;
        if (n >= 1 && row[0])
                strbuf_printf(&f->list, "%s''@'%s'", f->n++ > 0 ? ", " : "", row[0]);
        return 0;
}

int anonymous_accounts(SqlConn *conn, char *accounts, size_t accounts_size, char *why, size_t why_size) {
        assert(conn);
        assert(accounts && accounts_size > 0);
        Found f = {};
        strbuf_init(&f.list, accounts, accounts_size);
        /* A view over mysql.global_priv on MariaDB, a table on MySQL: the same query on both. */
        int r = sql_run(conn, "SELECT Host FROM mysql.user WHERE User = '' ORDER BY Host LIMIT 16", add_host, &f, why,
                        why_size);
        return r < 0 ? r : f.n;
}
