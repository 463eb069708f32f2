/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memgov/fileio.h"
#include "memgov/log.h"
#include "memgov/state-file.h"

#define STATE_RESTARTS_MAX 128

struct StateFile {
        pthread_mutex_t lock;
        int dirfd;
        char name[160];
        char path[600];
        usec_t restarts[STATE_RESTARTS_MAX];
        unsigned n_restarts;
        ServerChange change[_CHANGE_KIND_MAX];
        int last_error; /* of the last write: said once, until one succeeds */
};

static const char *const change_names[_CHANGE_KIND_MAX] = {
        [CHANGE_MAX_CONNECTIONS] = "max_connections",
        [CHANGE_POOL_SIZE] = "innodb_buffer_pool_size",
        [CHANGE_DIRTY_PAGES_PCT] = "innodb_max_dirty_pages_pct",
        [CHANGE_MEMORY_HIGH] = "memory.high",
        [CHANGE_MEMORY_MAX] = "memory.max",
};

const char *change_kind_to_string(ChangeKind k) {
        return k >= 0 && k < _CHANGE_KIND_MAX ? change_names[k] : "invalid";
}

bool change_kind_is_server_setting(ChangeKind k) {
        return k == CHANGE_MAX_CONNECTIONS || k == CHANGE_POOL_SIZE || k == CHANGE_DIRTY_PAGES_PCT;
}

/* The state directory: root's and written by root alone. A directory root owns that others may
 * write (a Kubernetes emptyDir is made 0777, 2777 with the pod's fsGroup) holds a directory of
 * memgov's own, "private" (0700, as systemd's /var/lib/private), and the state goes there:
 * nobody else can put a file in it or change one. */
#define NO_STATE "the restart history and what memgov changes on the server are kept in memory only"
int state_file_open(const char *dir, const char *instance, StateFile **ret) {
        assert(dir);
        assert(instance);
        assert(ret);
        char why[256], path[sizeof(((StateFile *) NULL)->path)];
        struct stat st;

        *ret = NULL;
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return log_warning_errno(negative_errno(), "cannot create %s: %m; " NO_STATE, dir);
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return log_warning_errno(negative_errno(), "cannot open %s: %m; " NO_STATE, dir);
        int r = check_trusted_dir(fd, geteuid(), why, sizeof(why));
        snprintf(path, sizeof(path), "%s/%s.state", dir, instance);
        if (r == -EPERM && fstat(fd, &st) == 0 && st.st_uid == 0 && S_ISDIR(st.st_mode)) {
                snprintf(why, sizeof(why), "writable by %s (mode %04o)", (st.st_mode & S_IWOTH) ? "everyone" : "its group",
                         (unsigned) (st.st_mode & 07777));
                if (mkdirat(fd, "private", 0700) < 0 && errno != EEXIST)
                        return log_warning_errno(negative_errno(), "cannot create %s/private: %m; " NO_STATE, dir);
                _cleanup_close_ int sub = openat(fd, "private", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0)
                        return log_warning_errno(negative_errno(), "state directory %s is %s and %s/private cannot "
                                                 "be opened: %m; " NO_STATE, dir, why, dir);
                char sub_why[256];
                r = check_trusted_dir(sub, geteuid(), sub_why, sizeof(sub_why));
                if (r < 0)
                        return log_warning_errno(r, "state directory %s is %s, and %s/private is refused: %s; " NO_STATE,
                                                 dir, why, dir, sub_why);
                log_info("state directory %s is %s: the state is kept in %s/private, root's alone", dir, why, dir);
                snprintf(path, sizeof(path), "%s/private/%s.state", dir, instance);
                close(fd);
                fd = TAKE_FD(sub);
        } else if (r < 0)
                return log_warning_errno(r, "state directory %s refused: %s; " NO_STATE, dir, why);

        StateFile *f = calloc(1, sizeof(StateFile));
        if (!f)
                return log_error_errno(-ENOMEM, "out of memory");
        pthread_mutex_init(&f->lock, NULL);
        f->dirfd = TAKE_FD(fd);
        snprintf(f->name, sizeof(f->name), "%s.state", instance);
        snprintf(f->path, sizeof(f->path), "%s", path);
        *ret = f;
        return 0;
}

StateFile *state_file_free(StateFile *f) {
        if (!f)
                return NULL;
        if (f->dirfd >= 0)
                close(f->dirfd);
        pthread_mutex_destroy(&f->lock);
        free(f);
        return NULL;
}

const char *state_file_path(const StateFile *f) {
        return f ? f->path : "(none)";
}

static json_object *value_json(uint64_t v) {
        return v == UINT64_MAX ? json_object_new_string("max") : json_object_new_uint64(v);
}

static bool value_from_json(json_object *o, uint64_t *ret) {
        if (json_object_is_type(o, json_type_string) && strcmp(json_object_get_string(o), "max") == 0) {
                *ret = UINT64_MAX;
                return true;
        }
        if (!json_object_is_type(o, json_type_int) || json_object_get_int64(o) < 0)
                return false;
        *ret = json_object_get_uint64(o);
        return true;
}

/* With the lock held. */
static int save_locked(StateFile *f) {
        json_object *o = json_object_new_object(), *a = json_object_new_array(), *ch = json_object_new_object();
        for (unsigned i = 0; i < f->n_restarts; i++)
                json_object_array_add(a, json_object_new_uint64(f->restarts[i]));
        json_object_object_add(o, "restarts_wall_us", a);
        for (ChangeKind k = 0; k < _CHANGE_KIND_MAX; k++) {
                const ServerChange *c = &f->change[k];
                if (!c->active)
                        continue;
                json_object *e = json_object_new_object();
                if (c->pid > 0) {
                        json_object_object_add(e, "pid", json_object_new_int(c->pid));
                        json_object_object_add(e, "starttime", json_object_new_uint64(c->starttime));
                }
                json_object_object_add(e, "found", value_json(c->found));
                json_object_object_add(e, "set", value_json(c->set));
                json_object_object_add(ch, change_names[k], e);
        }
        json_object_object_add(o, "changes", ch);
        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        char line[8192];
        int n = snprintf(line, sizeof(line), "%s\n", text ? text : "");
        int r = n > 0 && (size_t) n < sizeof(line) ? write_file_replace_at(f->dirfd, f->name, line, (size_t) n, 0644, true)
                                                   : -ENOBUFS;
        json_object_put(o);
        if (r < 0 && r != f->last_error)
                log_warning_errno(r, "cannot save %s: %m; " NO_STATE, f->path);
        else if (r >= 0 && f->last_error < 0)
                log_info("%s saved again", f->path);
        f->last_error = r;
        return r;
}

void state_file_load(StateFile *f, usec_t *clock, unsigned max, unsigned *ret_n) {
        assert(ret_n);
        _cleanup_free_ char *text = NULL;
        size_t len;
        struct stat st;

        *ret_n = 0;
        if (!f)
                return;
        _cleanup_close_ int fd = openat(f->dirfd, f->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 && errno == ENOENT)
                return;
        int r = fd < 0 ? negative_errno() : fstat(fd, &st) < 0 ? negative_errno() : S_ISREG(st.st_mode) ? 0 : -EBADFD;
        if (r >= 0)
                r = read_full_fd(fd, 1 << 20, &text, &len);
        if (r < 0) {
                log_warning_errno(r, "cannot read %s: %s; ignored", f->path,
                                  r == -EBADFD ? "not a regular file" : r == -ELOOP ? "a symbolic link" : strerror(-r));
                return;
        }
        json_object *o = json_tokener_parse(text), *a, *ch;
        if (!o || !json_object_object_get_ex(o, "restarts_wall_us", &a) || !json_object_is_type(a, json_type_array)) {
                log_warning("%s: not a memgov state file; ignored", f->path);
                json_object_put(o);
                return;
        }
        pthread_mutex_lock(&f->lock);
        unsigned n = 0;
        for (size_t i = 0; i < json_object_array_length(a) && n < STATE_RESTARTS_MAX; i++)
                f->restarts[n++] = (usec_t) json_object_get_uint64(json_object_array_get_idx(a, i));
        f->n_restarts = n;
        *ret_n = MIN(n, max);
        memcpy(clock, f->restarts + (n - *ret_n), *ret_n * sizeof(usec_t));
        /* A file of an older memgov has no changes: nothing to put back. */
        if (json_object_object_get_ex(o, "changes", &ch) && json_object_is_type(ch, json_type_object))
                for (ChangeKind k = 0; k < _CHANGE_KIND_MAX; k++) {
                        json_object *e, *v;
                        ServerChange c = { .active = true, .inherited = true };
                        if (!json_object_object_get_ex(ch, change_names[k], &e) || !json_object_is_type(e, json_type_object))
                                continue;
                        bool ok = json_object_object_get_ex(e, "found", &v) && value_from_json(v, &c.found) &&
                                  json_object_object_get_ex(e, "set", &v) && value_from_json(v, &c.set);
                        if (json_object_object_get_ex(e, "pid", &v) && json_object_is_type(v, json_type_int) &&
                            json_object_get_int64(v) > 0 && json_object_get_int64(v) <= INT32_MAX)
                                c.pid = (pid_t) json_object_get_int64(v);
                        if (json_object_object_get_ex(e, "starttime", &v) && json_object_is_type(v, json_type_int))
                                c.starttime = json_object_get_uint64(v);
                        if (!ok || (change_kind_is_server_setting(k) && c.pid <= 0)) {
                                log_warning("%s: the change of %s is not one memgov wrote; ignored", f->path,
                                            change_names[k]);
                                continue;
                        }
                        f->change[k] = c;
                }
        pthread_mutex_unlock(&f->lock);
        json_object_put(o);
}

int state_file_set_restarts(StateFile *f, const usec_t *clock, unsigned n) {
        if (!f)
                return 0;
        pthread_mutex_lock(&f->lock);
        f->n_restarts = MIN(n, (unsigned) STATE_RESTARTS_MAX);
        memcpy(f->restarts, clock + (n - f->n_restarts), f->n_restarts * sizeof(usec_t));
        int r = save_locked(f);
        pthread_mutex_unlock(&f->lock);
        return r;
}

int state_file_change(StateFile *f, ChangeKind k, pid_t pid, uint64_t starttime, uint64_t found, uint64_t set) {
        assert(k >= 0 && k < _CHANGE_KIND_MAX);
        if (!f)
                return 0;
        pthread_mutex_lock(&f->lock);
        ServerChange *c = &f->change[k];
        /* The first change's found value holds, for the same server process (the limits: for
         * the cgroup, whatever the process). */
        bool same = c->active && (!change_kind_is_server_setting(k) || (c->pid == pid && c->starttime == starttime));
        *c = (ServerChange) { .active = true, .pid = change_kind_is_server_setting(k) ? pid : 0,
                              .starttime = change_kind_is_server_setting(k) ? starttime : 0,
                              .found = same ? c->found : found, .set = set };
        int r = save_locked(f);
        pthread_mutex_unlock(&f->lock);
        return r;
}

int state_file_forget(StateFile *f, ChangeKind k) {
        assert(k >= 0 && k < _CHANGE_KIND_MAX);
        if (!f)
                return 0;
        pthread_mutex_lock(&f->lock);
        int r = 0;
        if (f->change[k].active) {
                f->change[k] = (ServerChange) {};
                r = save_locked(f);
        }
        pthread_mutex_unlock(&f->lock);
        return r;
}

ServerChange state_file_get(StateFile *f, ChangeKind k) {
        assert(k >= 0 && k < _CHANGE_KIND_MAX);
        if (!f)
                return (ServerChange) {};
        pthread_mutex_lock(&f->lock);
        ServerChange c = f->change[k];
        pthread_mutex_unlock(&f->lock);
        return c;
}
