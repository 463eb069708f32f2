/* SPDX-License-Identifier: GPL-2.0-or-later */
/* SQL result rows of the session list, as the reset step receives them from the server, turned
 * into sessions by session_from_row() and chosen by sessions_select().
 *
 * Input: text in the shape of `mysql --batch` output. The first line holds the selection,
 * tab-separated: max, min-memory (bytes), min-idle (microseconds), write transactions allowed
 * (0/1), memgov's own connection ID, reset.exempt-users, reset.exempt-hosts (the two lists go
 * through the policy parser). Every other line is a row: tab-separated cells, \N for SQL NULL.
 *
 * Checked: session strings are bounded C strings; numbers are what the cells say (a cell that is
 * not a non-negative decimal number is never taken for a huge one, and names no session when it
 * is the ID); the choice holds no
 * duplicate, no exempt session, nothing below min-memory, idle sessions before the others and
 * each group largest first, and it is complete: a session left out could not have been chosen in
 * place of one that was. */
#include <inttypes.h>

#include "fuzz.h"
#include "memgov/sessions.h"

#define MAX_ROWS 4096 /* as act/reset.c */
#define MAX_CELLS 16

static Policy *base;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        base = calloc(1, sizeof(Policy));
        if (!base || policy_load_default(base) < 0)
                abort();
        return 0;
}

/* The value a cell holds when it is a plain non-negative decimal number that fits. */
static bool cell_number(const char *c, uint64_t *ret) {
        uint64_t v = 0;
        if (!c || !*c)
                return false;
        for (; *c; c++) {
                if (*c < '0' || *c > '9' || v > (UINT64_MAX - (uint64_t) (*c - '0')) / 10)
                        return false;
                v = v * 10 + (uint64_t) (*c - '0');
        }
        *ret = v;
        return true;
}

/* Splits line (modified in place) into cells; "\N" is NULL. */
static unsigned split_row(char *line, char **cells, unsigned max) {
        unsigned n = 0;
        for (char *p = line;;) {
                char *tab = strchr(p, '\t');
                if (tab)
                        *tab = '\0';
                if (n < max)
                        cells[n++] = streq(p, "\\N") ? NULL : p;
                if (!tab)
                        break;
                p = tab + 1;
        }
        return n;
}

static void check_session(const Session *s, unsigned n, char **cells) {
        uint64_t v;

        fuzz_assert_string(s->user, sizeof(s->user));
        fuzz_assert_string(s->host, sizeof(s->host));
        fuzz_assert_string(s->command, sizeof(s->command));
        /* What a cell says, or nothing: a negative or malformed figure is not a huge one. */
        fuzz_assert(cell_number(cells[0], &v) && s->id == v);
        if (cell_number(cells[4], &v))
                fuzz_assert(s->time_s == v);
        else
                fuzz_assert(s->time_s == 0);
        if (cell_number(cells[5], &v))
                fuzz_assert(s->memory == v);
        else
                fuzz_assert(s->memory == 0);
        /* Rows or locks: a write transaction; a figure that is not one: spared as if it were. */
        if (cell_number(cells[6], &v))
                fuzz_assert(s->in_write_trx == (v > 0));
        else
                fuzz_assert(s->in_write_trx == (cells[6] != NULL));
}

static bool idle_expected(const Session *s, const SessionSelect *q) {
        return streq(s->command, "Sleep") && (unsigned __int128) s->time_s * USEC_PER_SEC >= q->min_idle;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = fuzz_strndup(data, fuzz_text_len(data, size));
        size_t lines = 1;
        for (const char *c = text; (c = strchr(c, '\n')); c++)
                lines++;
        Session *s = calloc(MIN(lines, (size_t) MAX_ROWS), sizeof(Session));
        unsigned *chosen = calloc(1000, sizeof(unsigned));
        Policy *p = malloc(sizeof(Policy));
        unsigned n = 0;

        if (!s || !chosen || !p)
                abort();
        memcpy(p, base, sizeof(Policy));

        char *save = NULL, *line = strtok_r(text, "\n", &save);
        SessionSelect q = { .max = 4, .min_memory = 0, .min_idle = 30 * USEC_PER_SEC, .policy = p };
        if (line) {
                char *cells[8] = {};
                unsigned k = split_row(line, cells, ELEMENTSOF(cells));
                uint64_t v;
                if (k > 0 && cell_number(cells[0], &v))
                        q.max = (unsigned) MIN(v, 1000u);
                if (k > 1 && cell_number(cells[1], &v))
                        q.min_memory = v;
                if (k > 2 && cell_number(cells[2], &v))
                        q.min_idle = v;
                if (k > 3 && cells[3])
                        q.allow_write_trx = streq(cells[3], "1");
                if (k > 4 && cell_number(cells[4], &v))
                        q.own_id = v;
                if (k > 5) {
                        char ini[2048];
                        snprintf(ini, sizeof(ini), "[reset]\nexempt-users = %s\nexempt-hosts = %s\n",
                                 strempty(cells[5]), k > 6 ? strempty(cells[6]) : "");
                        (void) policy_parse(p, ini, strlen(ini), "fuzz.ini", NULL, NULL);
                }
                line = strtok_r(NULL, "\n", &save);
        }
        for (; line && n < MIN(lines, (size_t) MAX_ROWS); line = strtok_r(NULL, "\n", &save)) {
                char *cells[MAX_CELLS] = {};
                unsigned k = split_row(line, cells, MAX_CELLS);
                Session one;
                memset(&one, 0x5c, sizeof(one));
                int r = session_from_row(k, cells, &one);
                fuzz_assert(r == 0 || r == 1);
                if (r == 0)
                        continue;
                fuzz_assert(k >= 7 && cells[0]);
                check_session(&one, k, cells);
                s[n++] = one;
        }

        unsigned k = sessions_select(s, n, &q, chosen);
        fuzz_assert(k <= q.max && k <= n);

        bool *taken = calloc(n + 1, sizeof(bool));
        if (!taken)
                abort();
        bool busy_seen = false;
        uint64_t min_idle_mem = UINT64_MAX, min_busy_mem = UINT64_MAX;
        for (unsigned i = 0; i < k; i++) {
                unsigned c = chosen[i];
                fuzz_assert(c < n);
                fuzz_assert(!taken[c]);
                taken[c] = true;
                const Session *x = &s[c];
                fuzz_assert(x->memory >= q.min_memory);
                fuzz_assert(!session_exempt(x, &q));
                fuzz_assert(x->id != q.own_id);
                bool idle = session_is_idle(x, &q);
                fuzz_assert(idle == idle_expected(x, &q));
                if (idle) {
                        fuzz_assert(!busy_seen);
                        fuzz_assert(x->memory <= min_idle_mem);
                        min_idle_mem = x->memory;
                } else {
                        busy_seen = true;
                        fuzz_assert(x->memory <= min_busy_mem);
                        min_busy_mem = x->memory;
                }
        }
        /* Complete: whatever was left out lost to a choice at least as good. */
        for (unsigned i = 0; i < n; i++) {
                const Session *x = &s[i];
                fuzz_assert(session_is_idle(x, &q) == idle_expected(x, &q));
                if (taken[i] || x->memory < q.min_memory || session_exempt(x, &q))
                        continue;
                fuzz_assert(k == q.max);
                if (session_is_idle(x, &q)) {
                        fuzz_assert(!busy_seen);
                        fuzz_assert(min_idle_mem >= x->memory);
                } else if (busy_seen)
                        fuzz_assert(min_busy_mem >= x->memory);
        }

        free(taken);
        free(p);
        free(chosen);
        free(s);
        free(text);
        return 0;
}
