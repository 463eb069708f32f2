/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Policy files: policy_parse() over the embedded default, as policy_load_file() calls it once it
 * has read a file, with the did-you-mean suggestions and the checks of the whole (contradictory
 * keys). Every problem is one bounded message naming the file; the count returned is the number of
 * messages; a refused file changes nothing; a suggestion names a key or section that exists; an
 * accepted policy obeys every rule the validator states, validates again, and parsing the same
 * text over it changes nothing. */
#include "fuzz.h"
#include "memgov/argv.h"
#include "memgov/policy.h"

#define FILENAME "fuzz.ini"

static Policy *base;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        base = calloc(1, sizeof(Policy));
        if (!base || policy_load_default(base) < 0)
                abort();
        return 0;
}

static bool is_key(const char *section, size_t sn, const char *name, size_t nn) {
        for (const char *const *k = policy_key_names(); *k; k++)
                if (strlen(*k) == sn + 1 + nn && strncmp(*k, section, sn) == 0 && (*k)[sn] == '.' &&
                    strncmp(*k + sn + 1, name, nn) == 0)
                        return true;
        return false;
}

static bool is_section(const char *s, size_t n) {
        for (const char *const *k = policy_key_names(); *k; k++)
                if (strncmp(*k, s, n) == 0 && (*k)[n] == '.')
                        return true;
        return false;
}

static void check_suggestion(const char *msg) {
        const char *dym = NULL;
        for (const char *p = msg; (p = strstr(p, " (did you mean ")); p++)
                dym = p;
        size_t len = strlen(msg);
        if (!dym || len < 2 || !streq(msg + len - 2, "?)"))
                return;
        const char *s = dym + strlen(" (did you mean ");
        size_t n = (size_t) (msg + len - 2 - s);

        if (s[0] == '[') {
                /* [section] */
                fuzz_assert(n >= 3 && s[n - 1] == ']');
                fuzz_assert(is_section(s + 1, n - 2));
                return;
        }
        const char *in = memmem(s, n, " in [", 5);
        if (in) {
                /* KEY in [SECTION]: the key of the wrong section. */
                const char *sec = in + 5;
                size_t sec_n = (size_t) (s + n - sec);
                fuzz_assert(sec_n >= 2 && sec[sec_n - 1] == ']');
                fuzz_assert(is_key(sec, sec_n - 1, s, (size_t) (in - s)));
                return;
        }
        /* "FILE:LINE: SECTION.NAME: unknown key (did you mean KEY?)": KEY is in SECTION. */
        const char *subject = strstr(msg, ": ");
        fuzz_assert(subject);
        subject += 2;
        const char *dot = strchr(subject, '.');
        fuzz_assert(dot && dot < dym);
        fuzz_assert(is_key(subject, (size_t) (dot - subject), s, n));
}

typedef struct Reports {
        unsigned n;
} Reports;

static void on_report(void *userdata, const char *msg) {
        Reports *r = userdata;
        r->n++;
        /* report() formats into 1024 bytes. */
        fuzz_assert(strnlen(msg, 1024) < 1024);
        fuzz_assert(strncmp(msg, FILENAME ":", strlen(FILENAME ":")) == 0);
        check_suggestion(msg);
}

static void check_string(const char *s, size_t size) {
        fuzz_assert_string(s, size);
        for (; *s; s++)
                fuzz_assert((unsigned char) *s >= 0x20);
}

static void check_argv(const char *s) {
        char words[POLICY_ARGV_MAX];
        char *av[ARGV_MAX + 1];
        unsigned n;

        fuzz_assert_string(s, POLICY_ARGV_MAX);
        fuzz_assert(argv_split(s, words, sizeof(words), av, &n) == 0);
}

/* The rules the validator states, checked on their own. */
static void check_policy(const Policy *p) {
        check_string(p->sql_socket, sizeof(p->sql_socket));
        check_string(p->sql_host, sizeof(p->sql_host));
        check_string(p->sql_user, sizeof(p->sql_user));
        check_string(p->sql_option_file, sizeof(p->sql_option_file));
        check_string(p->reset_signal_process, sizeof(p->reset_signal_process));
        fuzz_assert(p->sql_user[0] != '\0');
        check_argv(p->reset_exec);
        check_argv(p->pre_hook);
        check_argv(p->post_hook);
        fuzz_assert(p->n_exempt_users <= POLICY_MAX_LIST && p->n_exempt_hosts <= POLICY_MAX_LIST);
        for (unsigned i = 0; i < p->n_exempt_users; i++)
                check_string(p->exempt_users[i], sizeof(p->exempt_users[i]));
        for (unsigned i = 0; i < p->n_exempt_hosts; i++)
                check_string(p->exempt_hosts[i], sizeof(p->exempt_hosts[i]));
        fuzz_assert(p->n_windows <= POLICY_MAX_WINDOWS);
        for (unsigned i = 0; i < p->n_windows; i++) {
                const MaintenanceWindow *w = &p->windows[i];
                fuzz_assert(w->days != 0 && w->days < 0x80);
                fuzz_assert(w->start_min < 1440 && w->end_min <= 1440 && w->start_min != w->end_min);
        }

        uint32_t prev_at = 0, lowest = 0;
        usec_t prev_eta = USEC_INFINITY;
        for (Level l = LEVEL_TRIM; l < _LEVEL_MAX; l++) {
                const StepPolicy *s = &p->step[l];
                fuzz_assert(s->at <= BP_ONE);
                if (!s->enabled)
                        continue;
                /* The buffer-pool rung may have no threshold: it is entered when reset does not help. */
                fuzz_assert(s->at > 0 || s->eta > 0 || l == LEVEL_POOL);
                /* Thresholds rise and ETAs shrink up the ladder. */
                if (s->at > 0) {
                        fuzz_assert(s->at >= prev_at);
                        prev_at = s->at;
                        if (lowest == 0 || s->at < lowest)
                                lowest = s->at;
                }
                if (s->eta > 0) {
                        fuzz_assert(s->eta <= prev_eta);
                        prev_eta = s->eta;
                }
        }
        if (lowest > 0)
                fuzz_assert(p->hysteresis < lowest);
        fuzz_assert(p->trend_min_points <= p->trend_points);
        fuzz_assert(p->fast_interval <= p->interval);
        fuzz_assert(p->psi_stall < p->psi_window);
        if (p->calm_headroom > 0)
                fuzz_assert(p->throttle_floor <= BP_ONE - p->calm_headroom);
        if (p->emergency_eta > 0 && p->step[LEVEL_RESTART].eta > 0)
                fuzz_assert(p->emergency_eta <= p->step[LEVEL_RESTART].eta);
        if (p->step[LEVEL_RESET].enabled && p->reset_method == RESET_EXEC)
                fuzz_assert(p->reset_exec[0] != '\0');
        if (p->step[LEVEL_RESET].enabled && p->reset_method == RESET_SIGNAL)
                fuzz_assert(p->reset_signal_process[0] != '\0');
        if (p->reset_in_trx == IN_TRX_EMERGENCY)
                fuzz_assert(p->emergency_eta > 0);
        if (p->budget_mode == BUDGET_HOST_SHARE)
                fuzz_assert(p->budget_share >= 100 && p->budget_share <= BP_ONE);
        if (p->budget_mode == BUDGET_SIZE)
                fuzz_assert(p->budget_size >= (16ULL << 20));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Policy *p = malloc(sizeof(Policy)), *again = malloc(sizeof(Policy));
        Reports rep = {};

        if (!p || !again)
                abort();
        memcpy(p, base, sizeof(Policy));
        int r = policy_parse(p, (const char *) data, size, FILENAME, on_report, &rep);
        fuzz_assert(r >= 0);
        fuzz_assert((unsigned) r == rep.n);
        if (r > 0)
                fuzz_assert(memcmp(p, base, sizeof(Policy)) == 0);
        else {
                check_policy(p);
                Reports rep2 = {};
                fuzz_assert(policy_validate(p, FILENAME, on_report, &rep2) == 0);
                fuzz_assert(rep2.n == 0);

                memcpy(again, p, sizeof(Policy));
                fuzz_assert(policy_parse(again, (const char *) data, size, FILENAME, on_report, &rep2) == 0);
                fuzz_assert(memcmp(again, p, sizeof(Policy)) == 0);
        }
        free(p);
        free(again);
        return 0;
}
