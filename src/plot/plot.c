/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <cairo-svg.h>
#include <cairo.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "memgov/plot.h"
#include "memgov/units.h"

/* ---- collecting ---------------------------------------------------------------------------- */

/* One series within one bucket. */
typedef struct Track {
        uint64_t first, last, min, max;
        bool known;      /* some sample of the bucket had a value */
        bool gap_before; /* samples without a value came before the first with one */
        bool gap_after;  /* ... or after the last with one */
} Track;

/* The events of each kind in a stretch of time: a bucket's, or a group's on the chart. */
typedef struct EventSet {
        unsigned count[_PLOT_EVENT_KIND_MAX];
        uint64_t value[_PLOT_EVENT_KIND_MAX]; /* the last one's */
        unsigned dry;                         /* bit (1 << kind): some were only logged */
} EventSet;

typedef struct Bucket {
        unsigned long n; /* samples */
        usec_t t_first, t_last;
        /* The intervals around the bucket's ends (0: no sample on that side yet): the line breaks
         * between two buckets only where the interval between them is long beside these. */
        usec_t dt_after_first; /* from its first sample to the next */
        usec_t dt_before_last; /* to its last sample from the one before */
        Track track[_PLOT_SERIES_MAX];
        EventSet ev;
        usec_t event_t; /* the first event's time */
        bool has_parts; /* memgov explain's parts, as the last sample of the bucket with them had */
        uint64_t part[_PART_MAX];
} Bucket;

#define PLOT_MAX_THRESHOLDS 8
#define PLOT_LABEL_MAX      48

typedef struct Threshold {
        usec_t eta;
        char label[PLOT_LABEL_MAX];
} Threshold;

struct Plot {
        char *title;

        bool started;
        usec_t t0, t_end;
        bool have_wall;
        usec_t wall_ref, t_ref; /* the first point with a wall clock */
        int32_t utc_offset;

        usec_t len;         /* of a bucket */
        unsigned n_buckets; /* in use */
        Bucket *b;          /* PLOT_BUCKETS of them */
        unsigned long samples;
        unsigned last_bucket; /* the last sample's */
        PlotPoint last;

        Threshold threshold[PLOT_MAX_THRESHOLDS];
        unsigned n_thresholds;
        unsigned long n_events[_PLOT_EVENT_KIND_MAX];
};

int plot_format_from_path(const char *path) {
        const char *dot = path ? strrchr(path, '.') : NULL;

        if (!dot || strchr(dot, '/'))
                return -EINVAL;
        if (strcasecmp(dot, ".svg") == 0)
                return PLOT_FORMAT_SVG;
        if (strcasecmp(dot, ".png") == 0)
                return PLOT_FORMAT_PNG;
        return -EINVAL;
}

static void bucket_init(Bucket *b) {
        memset(b, 0, sizeof(*b));
}

Plot *plot_new(void) {
        Plot *p = calloc(1, sizeof(Plot));
        if (!p)
                return NULL;
        p->b = malloc(sizeof(Bucket) * PLOT_BUCKETS);
        if (!p->b) {
                free(p);
                return NULL;
        }
        for (unsigned i = 0; i < PLOT_BUCKETS; i++)
                bucket_init(&p->b[i]);
        p->len = USEC_PER_MSEC;
        return p;
}

Plot *plot_free(Plot *p) {
        if (!p)
                return NULL;
        free(p->title);
        free(p->b);
        free(p);
        return NULL;
}

int plot_set_title(Plot *p, const char *title) {
        char *t = strdup(title);
        if (!t)
                return -ENOMEM;
        free(p->title);
        p->title = t;
        return 0;
}

int plot_add_eta_threshold(Plot *p, usec_t eta, const char *label) {
        if (p->n_thresholds >= PLOT_MAX_THRESHOLDS)
                return -ENOBUFS;
        if (eta == 0 || eta == USEC_INFINITY)
                return -EINVAL;
        Threshold *th = &p->threshold[p->n_thresholds++];
        th->eta = eta;
        snprintf(th->label, sizeof(th->label), "%s", label);
        return 0;
}

static void track_add(Track *k, uint64_t v) {
        if (v == SIZE_UNKNOWN) {
                if (k->known)
                        k->gap_after = true;
                else
                        k->gap_before = true;
                return;
        }
        if (!k->known) {
                k->known = true;
                k->first = k->min = k->max = v;
        } else {
                k->min = MIN(k->min, v);
                k->max = MAX(k->max, v);
        }
        k->last = v;
        k->gap_after = false;
}

static Track track_merge(const Track *a, const Track *b) {
        Track r;

        if (!a->known) {
                r = *b;
                r.gap_before = a->gap_before || b->gap_before;
                return r;
        }
        if (!b->known) {
                r = *a;
                r.gap_after = a->gap_after || b->gap_before;
                return r;
        }
        r = *a;
        r.last = b->last;
        r.min = MIN(a->min, b->min);
        r.max = MAX(a->max, b->max);
        r.gap_after = b->gap_after;
        return r;
}

static bool bucket_has_events(const Bucket *b) {
        for (unsigned k = 0; k < _PLOT_EVENT_KIND_MAX; k++)
                if (b->ev.count[k] > 0)
                        return true;
        return false;
}

/* The events of from added to into: counts summed, the later value kept. */
static void event_set_add(EventSet *into, const EventSet *from) {
        for (unsigned k = 0; k < _PLOT_EVENT_KIND_MAX; k++) {
                into->count[k] += from->count[k];
                if (from->count[k] > 0)
                        into->value[k] = from->value[k];
        }
        into->dry |= from->dry;
}

static Bucket bucket_merge(const Bucket *a, const Bucket *b) {
        Bucket r;

        bucket_init(&r);
        r.n = a->n + b->n;
        r.t_first = a->n > 0 ? a->t_first : b->t_first;
        r.t_last = b->n > 0 ? b->t_last : a->t_last;
        r.dt_after_first = a->n > 0 ? a->dt_after_first : b->dt_after_first;
        r.dt_before_last = b->n > 0 ? b->dt_before_last : a->dt_before_last;
        for (unsigned s = 0; s < _PLOT_SERIES_MAX; s++)
                r.track[s] = track_merge(&a->track[s], &b->track[s]);
        r.ev = a->ev;
        event_set_add(&r.ev, &b->ev);
        r.event_t = bucket_has_events(a) ? a->event_t : b->event_t;
        const Bucket *parts = b->has_parts ? b : a;
        r.has_parts = parts->has_parts;
        memcpy(r.part, parts->part, sizeof(r.part));
        return r;
}

/* Twice longer buckets, half as many. */
static void plot_compact(Plot *p) {
        for (unsigned i = 0; i < PLOT_BUCKETS / 2; i++)
                p->b[i] = bucket_merge(&p->b[2 * i], &p->b[2 * i + 1]);
        for (unsigned i = PLOT_BUCKETS / 2; i < PLOT_BUCKETS; i++)
                bucket_init(&p->b[i]);
        p->n_buckets = (p->n_buckets + 1) / 2;
        p->last_bucket /= 2;
        p->len *= 2;
}

static Bucket *plot_bucket(Plot *p, usec_t t) {
        while ((t - p->t0) / p->len >= PLOT_BUCKETS)
                plot_compact(p);
        unsigned i = (unsigned) ((t - p->t0) / p->len);
        p->n_buckets = MAX(p->n_buckets, i + 1);
        return &p->b[i];
}

int plot_add_sample(Plot *p, const PlotPoint *pt) {
        if (!p->started) {
                p->started = true;
                p->t0 = pt->t;
        } else if (pt->t < p->t_end)
                return -EINVAL;
        p->t_end = pt->t;
        if (!p->have_wall && pt->wall > 0) {
                p->have_wall = true;
                p->wall_ref = pt->wall;
                p->t_ref = pt->t;
                p->utc_offset = pt->utc_offset;
        }

        usec_t dt = p->samples > 0 ? pt->t - p->last.t : 0;
        Bucket *b = plot_bucket(p, pt->t);
        Bucket *before = &p->b[p->last_bucket];
        if (p->samples > 0 && before->n == 1 && before->dt_after_first == 0)
                before->dt_after_first = dt;
        if (b->n == 0)
                b->t_first = pt->t;
        b->t_last = pt->t;
        b->dt_before_last = dt;
        b->n++;
        p->last_bucket = (unsigned) (b - p->b);
        /* SIZE_UNKNOWN, SIZE_UNLIMITED and USEC_INFINITY are one value: nothing to draw. */
        for (unsigned s = 0; s < _PLOT_SERIES_MAX; s++)
                track_add(&b->track[s], pt->value[s]);
        if (pt->has_parts) {
                b->has_parts = true;
                memcpy(b->part, pt->part, sizeof(b->part));
        }
        p->samples++;
        p->last = *pt;
        return 0;
}

int plot_add_event(Plot *p, usec_t t, PlotEventKind kind, uint64_t value, bool dry_run) {
        if (!p->started || t < p->t0 || kind >= _PLOT_EVENT_KIND_MAX)
                return -EINVAL;
        Bucket *b = plot_bucket(p, t);
        if (!bucket_has_events(b))
                b->event_t = t;
        b->ev.count[kind]++;
        b->ev.value[kind] = value;
        if (dry_run)
                b->ev.dry |= 1U << kind;
        p->n_events[kind]++;
        return 0;
}

/* ---- drawing ------------------------------------------------------------------------------- */

#define LABEL_ROWS 4
#define ETA_MAX    (28 * USEC_PER_DAY)

static const uint32_t series_rgb[_PLOT_SERIES_MAX] = {
        [PLOT_WORKING_SET] = PLOT_RGB_WORKING_SET, [PLOT_MEMORY_CURRENT] = PLOT_RGB_MEMORY_CURRENT,
        [PLOT_MEMORY_HIGH] = PLOT_RGB_MEMORY_HIGH, [PLOT_MEMORY_MAX] = PLOT_RGB_MEMORY_MAX,
        [PLOT_BUDGET] = PLOT_RGB_BUDGET,           [PLOT_ETA] = PLOT_RGB_ETA,
};

static const char *const series_name[_PLOT_SERIES_MAX] = {
        [PLOT_WORKING_SET] = "working set", [PLOT_MEMORY_CURRENT] = "memory.current",
        [PLOT_MEMORY_HIGH] = "memory.high", [PLOT_MEMORY_MAX] = "memory.max",
        [PLOT_BUDGET] = "budget",           [PLOT_ETA] = "time left",
};

/* An action's colours and labels are its row's in the registry; the OOM kill's are here. */
static uint32_t event_rgb(PlotEventKind k) {
        return k == PLOT_EVENT_OOM_KILL ? PLOT_RGB_EVENT_OOM_KILL : action_info((ActionKind) k)->chart_rgb;
}

/* Darker shades for the labels' text, readable on white. */
static uint32_t event_text_rgb(PlotEventKind k) {
        return k == PLOT_EVENT_OOM_KILL ? 0x8c2d04 : action_info((ActionKind) k)->chart_text_rgb;
}

static const char *event_name(PlotEventKind k) {
        return k == PLOT_EVENT_OOM_KILL ? "OOM kill" : action_info((ActionKind) k)->chart_label;
}

static const char *event_legend(PlotEventKind k) {
        return k == PLOT_EVENT_OOM_KILL ? "OOM kill" : action_info((ActionKind) k)->chart_legend;
}

#define RGB_TEXT  0x202020
#define RGB_MUTED 0x606060
#define RGB_GRID  0xe4e4e4
#define RGB_FRAME 0x808080

typedef struct Render {
        const Plot *p;
        cairo_t *cr;
        double width, height;

        double left, right;
        double legend_top;
        double band_top, row_h;
        unsigned rows; /* of labels */
        double main_top, main_bottom;
        double eta_top, eta_bottom;

        usec_t span;           /* of the X axis */
        uint64_t ymax;         /* top of the memory axis */
        uint64_t ystep;        /* between its ticks */
        bool gib;              /* its labels in GiB, else MiB */
        double eta_lo, eta_hi; /* log10 of the time-left axis' ends, in seconds */
        bool have_eta;
        double gap; /* longer than this between samples: the lines break (apart()) */
} Render;

/* A hole in the trace between buckets A and B, the lines broken there: an interval wide enough
 * to see (a hundredth of the time axis) and five times the ones beside it, else (no interval
 * beside it) five times the trace's mean. Beside it, not the mean: the daemon samples every 5 s
 * while calm and in bursts many times a second under pressure, so that a storm's samples would
 * make the calm ones look apart, and a burst's pauses of a second would break its own lines. */
static bool apart(const Render *r, const Bucket *a, const Bucket *b) {
        usec_t around = MAX(a->dt_before_last, b->dt_after_first);
        double dt = (double) (b->t_first - a->t_last);
        if (dt <= (double) r->span / 100.0)
                return false;
        return around > 0 ? dt > 5.0 * (double) around : dt > r->gap;
}

static void set_rgb(cairo_t *cr, uint32_t rgb) {
        cairo_set_source_rgb(cr, ((rgb >> 16) & 0xff) / 255.0, ((rgb >> 8) & 0xff) / 255.0, (rgb & 0xff) / 255.0);
}

static double text_width(cairo_t *cr, const char *s) {
        cairo_text_extents_t e;
        cairo_text_extents(cr, s, &e);
        return e.x_advance;
}

/* align: 0 left, 0.5 centred, 1 right; y is the baseline. */
static void text_at(cairo_t *cr, double x, double y, const char *s, double align) {
        cairo_move_to(cr, x - align * text_width(cr, s), y);
        cairo_show_text(cr, s);
}

static void font(cairo_t *cr, double size, bool bold) {
        cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                               bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
        cairo_set_font_size(cr, size);
}

static double x_of(const Render *r, usec_t t) {
        if (t <= r->p->t0)
                return r->left;
        return r->left + (double) (t - r->p->t0) / (double) r->span * (r->right - r->left);
}

/* Pixel centre of the column holding x, for crisp 1px vertical lines. */
static double x_crisp(double x) {
        return floor(x) + 0.5;
}

static double y_of_bytes(const Render *r, uint64_t v) {
        return r->main_bottom - (double) v / (double) r->ymax * (r->main_bottom - r->main_top);
}

static double y_of_eta(const Render *r, uint64_t usec) {
        double l = log10(MAX((double) usec / USEC_PER_SEC, 1e-3));
        l = CLAMP(l, r->eta_lo, r->eta_hi);
        return r->eta_bottom - (l - r->eta_lo) / (r->eta_hi - r->eta_lo) * (r->eta_bottom - r->eta_top);
}

static double y_of(const Render *r, PlotSeries s, uint64_t v) {
        return s == PLOT_ETA ? y_of_eta(r, v) : y_of_bytes(r, v);
}

/* "7.5 GiB", "512 MiB" */
static void format_axis_bytes(char *buf, size_t size, uint64_t v, bool gib) {
        if (v == 0)
                snprintf(buf, size, "0");
        else if (gib)
                snprintf(buf, size, "%g GiB", (double) v / (1ULL << 30));
        else
                snprintf(buf, size, "%g MiB", (double) v / (1ULL << 20));
}

static void choose_memory_axis(Render *r, uint64_t top) {
        static const double gib_steps[] = { 0.25, 0.5, 1,   2,   2.5, 5,    10,   20,  25,
                                            50,   100, 200, 250, 500, 1000, 2000, 5000 };
        static const double mib_steps[] = { 1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500 };
        const double *steps;
        size_t n;
        double unit;

        top = MAX(top + top / 20, 16ULL << 20); /* a little headroom above the highest line */
        r->gib = top >= (2ULL << 30);
        if (r->gib) {
                steps = gib_steps;
                n = ELEMENTSOF(gib_steps);
                unit = (double) (1ULL << 30);
        } else {
                steps = mib_steps;
                n = ELEMENTSOF(mib_steps);
                unit = (double) (1ULL << 20);
        }
        r->ystep = (uint64_t) (steps[n - 1] * unit);
        for (size_t i = 0; i < n; i++)
                if ((double) top / (steps[i] * unit) <= 8) {
                        r->ystep = (uint64_t) (steps[i] * unit);
                        break;
                }
        r->ymax = (top + r->ystep - 1) / r->ystep * r->ystep;
}

static void choose_eta_axis(Render *r, usec_t lo, usec_t hi) {
        if (!r->have_eta) {
                lo = USEC_PER_HOUR;
                hi = USEC_PER_DAY;
        }
        for (unsigned i = 0; i < r->p->n_thresholds; i++) {
                lo = MIN(lo, r->p->threshold[i].eta);
                hi = MAX(hi, r->p->threshold[i].eta);
        }
        lo = MAX(lo, USEC_PER_SEC);
        hi = MIN(MAX(hi, lo), ETA_MAX);
        r->eta_lo = floor(log10((double) lo / USEC_PER_SEC) * 2) / 2;
        r->eta_hi = ceil(log10((double) hi / USEC_PER_SEC) * 2) / 2;
        if (r->eta_hi - r->eta_lo < 1.5) {
                double mid = (r->eta_hi + r->eta_lo) / 2;
                r->eta_lo = mid - 0.75;
                r->eta_hi = mid + 0.75;
        }
}

static void grid_line(const Render *r, double x0, double y0, double x1, double y1) {
        set_rgb(r->cr, RGB_GRID);
        cairo_set_line_width(r->cr, 1);
        cairo_move_to(r->cr, x0, y0);
        cairo_line_to(r->cr, x1, y1);
        cairo_stroke(r->cr);
}

/* A vertical axis's title, turned a quarter, centred on y at the left edge. */
static void draw_axis_title(cairo_t *cr, double y, const char *title) {
        cairo_save(cr);
        font(cr, 12, false);
        cairo_translate(cr, 16, y);
        cairo_rotate(cr, -M_PI / 2);
        set_rgb(cr, RGB_TEXT);
        text_at(cr, 0, 0, title, 0.5);
        cairo_restore(cr);
}

static void draw_memory_axis(const Render *r) {
        cairo_t *cr = r->cr;
        char buf[32];

        font(cr, 11, false);
        for (uint64_t v = 0; v <= r->ymax; v += r->ystep) {
                double y = floor(y_of_bytes(r, v)) + 0.5;
                if (v > 0)
                        grid_line(r, r->left, y, r->right, y);
                format_axis_bytes(buf, sizeof(buf), v, r->gib);
                set_rgb(cr, RGB_TEXT);
                text_at(cr, r->left - 6, y + 4, buf, 1);
        }
        draw_axis_title(cr, (r->main_top + r->main_bottom) / 2, "memory");
}

static void draw_eta_axis(const Render *r) {
        static const usec_t ticks[] = {
                USEC_PER_SEC,     10 * USEC_PER_SEC, USEC_PER_MINUTE,   5 * USEC_PER_MINUTE, 15 * USEC_PER_MINUTE,
                USEC_PER_HOUR,    3 * USEC_PER_HOUR, 6 * USEC_PER_HOUR, 12 * USEC_PER_HOUR,  USEC_PER_DAY,
                3 * USEC_PER_DAY, USEC_PER_WEEK,     4 * USEC_PER_WEEK,
        };
        cairo_t *cr = r->cr;
        char buf[FORMAT_TIMESPAN_MAX];
        double last_y = INFINITY;

        font(cr, 11, false);
        for (size_t i = 0; i < ELEMENTSOF(ticks); i++) {
                double l = log10((double) ticks[i] / USEC_PER_SEC);
                if (l < r->eta_lo - 1e-9 || l > r->eta_hi + 1e-9)
                        continue;
                double y = floor(y_of_eta(r, ticks[i])) + 0.5;
                if (last_y - y < 16) /* too close to the one below */
                        continue;
                last_y = y;
                grid_line(r, r->left, y, r->right, y);
                set_rgb(cr, RGB_TEXT);
                text_at(cr, r->left - 6, y + 4, format_timespan(buf, ticks[i]), 1);
        }
        draw_axis_title(cr, (r->eta_top + r->eta_bottom) / 2, "time left");
}

/* The local wall clock at t, in microseconds since the epoch. */
static int64_t local_at(const Plot *p, usec_t t) {
        return (int64_t) p->wall_ref + (int64_t) p->utc_offset * (int64_t) USEC_PER_SEC +
               ((int64_t) t - (int64_t) p->t_ref);
}

static void format_date(char *buf, size_t size, int64_t local) {
        int64_t days = local >= 0 ? local / (int64_t) USEC_PER_DAY
                                  : (local - (int64_t) USEC_PER_DAY + 1) / (int64_t) USEC_PER_DAY;
        int64_t y;
        unsigned m, d;
        civil_from_days(days, &y, &m, &d);
        snprintf(buf, size, "%04" PRId64 "-%02u-%02u", y, m, d);
}

static void format_clock(char *buf, size_t size, int64_t local, bool seconds) {
        int64_t day = (int64_t) USEC_PER_DAY;
        int64_t sod = ((local % day) + day) % day / (int64_t) USEC_PER_SEC;
        if (seconds)
                snprintf(buf, size, "%02u:%02u:%02u", (unsigned) (sod / 3600), (unsigned) (sod / 60 % 60),
                         (unsigned) (sod % 60));
        else
                snprintf(buf, size, "%02u:%02u", (unsigned) (sod / 3600), (unsigned) (sod / 60 % 60));
}

static void draw_time_axis(const Render *r) {
        static const usec_t steps[] = {
                USEC_PER_SEC,        2 * USEC_PER_SEC,     5 * USEC_PER_SEC,     10 * USEC_PER_SEC,
                15 * USEC_PER_SEC,   30 * USEC_PER_SEC,    USEC_PER_MINUTE,      2 * USEC_PER_MINUTE,
                5 * USEC_PER_MINUTE, 10 * USEC_PER_MINUTE, 15 * USEC_PER_MINUTE, 30 * USEC_PER_MINUTE,
                USEC_PER_HOUR,       2 * USEC_PER_HOUR,    3 * USEC_PER_HOUR,    6 * USEC_PER_HOUR,
                12 * USEC_PER_HOUR,  USEC_PER_DAY,         2 * USEC_PER_DAY,     USEC_PER_WEEK,
                2 * USEC_PER_WEEK,   4 * USEC_PER_WEEK,    13 * USEC_PER_WEEK,   52 * USEC_PER_WEEK,
        };
        const Plot *p = r->p;
        cairo_t *cr = r->cr;
        double px_per_usec = (r->right - r->left) / (double) r->span;
        usec_t step = steps[ELEMENTSOF(steps) - 1];
        char a[48], b[48];

        /* Wall-clock labels ("14:30" over their date) need some room, relative ones ("+1h30m")
         * a little more. */
        double min_px = p->have_wall ? 90 : 100;
        for (size_t i = 0; i < ELEMENTSOF(steps); i++)
                if ((double) steps[i] * px_per_usec >= min_px) {
                        step = steps[i];
                        break;
                }

        font(cr, 11, false);
        double label_y = r->eta_bottom + 16;
        if (p->have_wall) {
                int64_t start = local_at(p, p->t0), end = local_at(p, p->t0 + r->span);
                /* Weeks start on Monday: the epoch was a Thursday. */
                int64_t base = step >= USEC_PER_WEEK ? 4 * (int64_t) USEC_PER_DAY : 0;
                int64_t s = (int64_t) step;
                int64_t tick = base + ((start - base) / s + ((start - base) % s > 0 ? 1 : 0)) * s;
                if (start - base < 0)
                        tick = base + ((start - base) / s) * s;
                char prev_date[16] = "";
                for (; tick <= end; tick += s) {
                        double x = x_crisp(x_of(r, p->t0 + (usec_t) (tick - start)));
                        grid_line(r, x, r->main_top, x, r->main_bottom);
                        grid_line(r, x, r->eta_top, x, r->eta_bottom);
                        format_date(b, sizeof(b), tick);
                        set_rgb(cr, RGB_TEXT);
                        if (step >= USEC_PER_DAY) {
                                text_at(cr, x, label_y, b, 0.5);
                                continue;
                        }
                        format_clock(a, sizeof(a), tick, step < USEC_PER_MINUTE);
                        text_at(cr, x, label_y, a, 0.5);
                        if (!streq(prev_date, b)) {
                                set_rgb(cr, RGB_MUTED);
                                text_at(cr, x, label_y + 14, b, 0.5);
                                snprintf(prev_date, sizeof(prev_date), "%s", b);
                        }
                }
        } else
                for (usec_t t = 0; t <= r->span; t += step) {
                        double x = x_crisp(x_of(r, p->t0 + t));
                        grid_line(r, x, r->main_top, x, r->main_bottom);
                        grid_line(r, x, r->eta_top, x, r->eta_bottom);
                        if (t == 0)
                                snprintf(a, sizeof(a), "0");
                        else {
                                char ts[FORMAT_TIMESPAN_MAX];
                                snprintf(a, sizeof(a), "+%s", format_timespan(ts, t));
                        }
                        set_rgb(cr, RGB_TEXT);
                        text_at(cr, x, label_y, a, 0.5);
                }

        font(cr, 12, false);
        set_rgb(cr, RGB_TEXT);
        if (!p->have_wall)
                snprintf(a, sizeof(a), "time since the first sample");
        else if (p->utc_offset == 0)
                snprintf(a, sizeof(a), "time (UTC)");
        else {
                int32_t o = p->utc_offset;
                unsigned ao = (unsigned) (o < 0 ? -o : o);
                snprintf(a, sizeof(a), "time (UTC%c%02u:%02u)", o < 0 ? '-' : '+', ao / 3600, ao / 60 % 60);
        }
        text_at(cr, (r->left + r->right) / 2, r->height - 10, a, 0.5);
}

/* At least 2, so that some pixels of every line are the series' exact colour. memory.max is
 * wider than the budget drawn dashed over it (they are often the same). */
static double series_width(PlotSeries s) {
        return s == PLOT_WORKING_SET ? 2.5 : s == PLOT_MEMORY_MAX ? 4 : 2;
}

/* One series as a line: through each bucket's first, lowest, highest and last value, so that
 * spikes narrower than a pixel still show. Breaks where the series has no value or the trace a
 * hole. */
static void draw_series(const Render *r, PlotSeries s) {
        const Plot *p = r->p;
        cairo_t *cr = r->cr;
        bool open = false;
        const Bucket *prev = NULL;

        cairo_save(cr);
        if (s == PLOT_ETA)
                cairo_rectangle(cr, r->left, r->eta_top, r->right - r->left, r->eta_bottom - r->eta_top);
        else
                cairo_rectangle(cr, r->left, r->main_top, r->right - r->left, r->main_bottom - r->main_top);
        cairo_clip(cr);
        cairo_new_path(cr);
        cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
        cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
        set_rgb(cr, series_rgb[s]);
        cairo_set_line_width(cr, series_width(s));
        if (s == PLOT_BUDGET) {
                static const double dash[] = { 9, 5 };
                cairo_set_dash(cr, dash, 2, 0);
        }

        for (unsigned i = 0; i < p->n_buckets; i++) {
                const Bucket *b = &p->b[i];
                const Track *k = &b->track[s];
                if (b->n == 0)
                        continue;
                if (!k->known) {
                        open = false;
                        continue;
                }
                if (open && (k->gap_before || apart(r, prev, b)))
                        open = false;
                double x0 = x_of(r, b->t_first), x1 = x_of(r, b->t_last), xm = (x0 + x1) / 2;
                if (open)
                        cairo_line_to(cr, x0, y_of(r, s, k->first));
                else
                        cairo_move_to(cr, x0, y_of(r, s, k->first));
                if (k->min != k->max) {
                        cairo_line_to(cr, xm, y_of(r, s, k->min));
                        cairo_line_to(cr, xm, y_of(r, s, k->max));
                }
                cairo_line_to(cr, x1, y_of(r, s, k->last));
                if (b->n == 1 && x0 == x1 && !open)
                        cairo_line_to(cr, x1 + 1, y_of(r, s, k->last)); /* a lone point still shows */
                open = !k->gap_after;
                prev = b;
        }
        cairo_stroke(cr);
        cairo_restore(cr);
}

static const uint32_t part_rgb[_PART_MAX] = {
        [PART_PAGE_CACHE] = PLOT_RGB_PART_PAGE_CACHE,
        [PART_SHMEM] = PLOT_RGB_PART_SHMEM,
        [PART_KERNEL] = PLOT_RGB_PART_KERNEL,
        [PART_OTHER_PROCESSES] = PLOT_RGB_PART_OTHER_PROCESSES,
        [PART_POOL] = PLOT_RGB_PART_POOL,
        [PART_SERVER_OTHER] = PLOT_RGB_PART_SERVER_OTHER,
        [PART_SESSIONS] = PLOT_RGB_PART_SESSIONS,
        [PART_IN_USE_UNCOUNTED] = PLOT_RGB_PART_IN_USE_UNCOUNTED,
        [PART_ALLOCATOR_FREE] = PLOT_RGB_PART_ALLOCATOR_FREE,
        [PART_UNACCOUNTED] = PLOT_RGB_PART_UNACCOUNTED,
};

/* memgov explain's parts, stacked in their order from the axis up: each a band between the sum
 * of the parts below it and that sum plus itself, through each bucket's last split. Breaks
 * where a bucket has none or the trace a hole. */
static void draw_parts(const Render *r, ExplainPart part) {
        const Plot *p = r->p;
        cairo_t *cr = r->cr;

        cairo_save(cr);
        cairo_rectangle(cr, r->left, r->main_top, r->right - r->left, r->main_bottom - r->main_top);
        cairo_clip(cr);
        set_rgb(cr, part_rgb[part]);
        /* Runs of buckets with parts (empty buckets between samples skipped), broken where a bucket
         * has none or the samples are apart by more than a gap; a polygon per run. */
        unsigned run[PLOT_BUCKETS], n = 0;
        for (unsigned i = 0; i <= p->n_buckets; i++) {
                const Bucket *b = i < p->n_buckets ? &p->b[i] : NULL;
                if (b && b->n == 0)
                        continue;
                bool joins = b && b->has_parts && (n == 0 || !apart(r, &p->b[run[n - 1]], b));
                if (!joins && n > 0) {
                        cairo_new_path(cr);
                        for (unsigned k = 0; k < n; k++) {
                                const Bucket *c = &p->b[run[k]];
                                uint64_t top = 0;
                                for (ExplainPart q = 0; q <= part; q++)
                                        top += c->part[q];
                                double x0 = x_of(r, c->t_first), x1 = x_of(r, c->t_last);
                                cairo_line_to(cr, x0, y_of_bytes(r, top));
                                cairo_line_to(cr, MAX(x1, x0 + 1), y_of_bytes(r, top));
                        }
                        for (unsigned k = n; k-- > 0;) {
                                const Bucket *c = &p->b[run[k]];
                                uint64_t bottom = 0;
                                for (ExplainPart q = 0; q < part; q++)
                                        bottom += c->part[q];
                                double x0 = x_of(r, c->t_first), x1 = x_of(r, c->t_last);
                                cairo_line_to(cr, MAX(x1, x0 + 1), y_of_bytes(r, bottom));
                                cairo_line_to(cr, x0, y_of_bytes(r, bottom));
                        }
                        cairo_close_path(cr);
                        cairo_fill(cr);
                        n = 0;
                }
                if (b && b->has_parts)
                        run[n++] = i;
        }
        cairo_restore(cr);
}

/* ---- events -------------------------------------------------------------------------------- */

/* Events close together on the X axis share one label. */
typedef struct Group {
        unsigned last; /* bucket index of the last event */
        double x;      /* the first event's */
        EventSet ev;
        unsigned owner; /* the group whose label shows this one's events (itself when placed) */
        unsigned row;
        double box_left, box_right;
} Group;

typedef struct LabelPart {
        PlotEventKind kind;
        char text[48];
} LabelPart;

static unsigned group_label(const Group *g, LabelPart parts[static _PLOT_EVENT_KIND_MAX]) {
        unsigned n = 0;
        bool prev_dry = false;

        for (PlotEventKind k = 0; k < _PLOT_EVENT_KIND_MAX; k++) {
                if (g->ev.count[k] == 0)
                        continue;
                LabelPart *lp = &parts[n++];
                /* "would high ×9, max ×2, reset": said once for a run of logged-only actions. */
                bool dry = (g->ev.dry & (1U << k)) != 0;
                const char *would = dry && !prev_dry ? "would " : "";
                prev_dry = dry;
                char v[FORMAT_BYTES_MAX];
                lp->kind = k;
                if (g->ev.count[k] > 1)
                        snprintf(lp->text, sizeof(lp->text), "%s%s \u00d7%u", would, event_name(k), g->ev.count[k]);
                else if (k != PLOT_EVENT_OOM_KILL && action_info((ActionKind) k)->sets_limit &&
                         g->ev.value[k] != SIZE_UNKNOWN)
                        snprintf(lp->text, sizeof(lp->text), "%s%s %s", would, event_name(k),
                                 format_bytes(v, g->ev.value[k]));
                else
                        snprintf(lp->text, sizeof(lp->text), "%s%s", would, event_name(k));
        }
        return n;
}

#define LABEL_SEP  ", "
#define LABEL_PAD  3.0
#define LABEL_FONT 10.5

static double group_label_width(cairo_t *cr, const Group *g) {
        LabelPart parts[_PLOT_EVENT_KIND_MAX];
        unsigned n = group_label(g, parts);
        double w = 0;

        for (unsigned i = 0; i < n; i++)
                w += text_width(cr, parts[i].text) + (i > 0 ? text_width(cr, LABEL_SEP) : 0);
        return w + 2 * LABEL_PAD;
}

static void group_absorb(Group *into, const Group *g) {
        event_set_add(&into->ev, &g->ev);
        into->last = g->last;
}

static double row_top(const Render *r, unsigned row) {
        /* Row 0 is the nearest to the chart. */
        return r->band_top + (r->rows - 1 - row) * r->row_h;
}

typedef struct EventLayout {
        Group *groups;      /* PLOT_BUCKETS of them at most */
        unsigned *group_of; /* bucket index -> group */
        unsigned n;
        unsigned rows; /* used */
} EventLayout;

static void event_layout_done(EventLayout *l) {
        free(l->groups);
        free(l->group_of);
}

/* Groups the events and places their labels in rows above the chart so that none overlap: a
 * label that fits in no row joins the one before. */
static int place_events(const Render *r, EventLayout *l) {
        const Plot *p = r->p;
        cairo_t *cr = r->cr;

        l->groups = calloc(PLOT_BUCKETS, sizeof(Group));
        l->group_of = calloc(PLOT_BUCKETS, sizeof(unsigned));
        l->n = 0;
        if (!l->groups || !l->group_of)
                return -ENOMEM;
        Group *groups = l->groups;

        for (unsigned i = 0; i < p->n_buckets; i++) {
                const Bucket *b = &p->b[i];
                if (!bucket_has_events(b))
                        continue;
                double x = x_crisp(x_of(r, b->event_t));
                Group *g = l->n > 0 ? &groups[l->n - 1] : NULL;
                if (!g || x - x_crisp(x_of(r, p->b[g->last].event_t)) > 6) {
                        g = &groups[l->n];
                        g->x = x;
                        g->owner = l->n;
                        for (unsigned k = 0; k < _PLOT_EVENT_KIND_MAX; k++)
                                g->ev.value[k] = SIZE_UNKNOWN;
                        l->n++;
                }
                event_set_add(&g->ev, &b->ev);
                g->last = i;
                l->group_of[i] = (unsigned) (g - groups);
        }

        /* Left to right, each label in the row nearest the chart where it fits. */
        font(cr, LABEL_FONT, false);
        double row_end[LABEL_ROWS], row_before[LABEL_ROWS]; /* of the last label, of the one before */
        for (unsigned j = 0; j < LABEL_ROWS; j++)
                row_end[j] = row_before[j] = -INFINITY;
        unsigned placed = UINT32_MAX;
        for (unsigned i = 0; i < l->n; i++) {
                Group *g = &groups[i];
                double w = group_label_width(cr, g);
                double left = MIN(g->x, r->right - w);
                unsigned row = UINT32_MAX;
                for (unsigned j = 0; j < LABEL_ROWS; j++)
                        if (row_end[j] + 4 <= left) {
                                row = j;
                                break;
                        }
                if (row == UINT32_MAX && placed != UINT32_MAX) {
                        /* No room: the previous label takes these events too. */
                        Group *into = &groups[placed];
                        group_absorb(into, g);
                        g->owner = placed;
                        w = group_label_width(cr, into);
                        /* Grown past the right edge: back to the left, but not over the label
                         * before it. */
                        into->box_left = MAX(MIN(into->box_left, r->right - w), row_before[into->row] + 4);
                        into->box_right = into->box_left + w;
                        row_end[into->row] = into->box_right;
                        continue;
                }
                if (row == UINT32_MAX)
                        row = 0;
                g->row = row;
                g->box_left = left;
                g->box_right = left + w;
                row_before[row] = row_end[row];
                row_end[row] = g->box_right;
                l->rows = MAX(l->rows, row + 1);
                placed = i;
        }
        return 0;
}

/* The markers: one pixel wide, from their label's row to the bottom of the lower panel; dashed
 * when the action was only logged. Where several share a pixel column the most serious shows:
 * memory.high changes (the most frequent) first, OOM kills last (ActionInfo.chart_rank). */
static void draw_markers(const Render *r, const EventLayout *l) {
        static const double dash[] = { 4, 3 };
        const Plot *p = r->p;
        cairo_t *cr = r->cr;

        PlotEventKind order[_PLOT_EVENT_KIND_MAX];
        unsigned n = 0;
        /* The actions by their registry chart_rank, the OOM kills last. */
        for (unsigned rank = 0; rank < _ACTION_KIND_MAX; rank++)
                for (ActionKind a = 0; a < _ACTION_KIND_MAX; a++)
                        if (action_info(a)->chart_rank == rank)
                                order[n++] = a;
        order[n++] = PLOT_EVENT_OOM_KILL;
        assert(n == _PLOT_EVENT_KIND_MAX); /* every kind has its place: the ranks are 0.._ACTION_KIND_MAX-1 */
        cairo_set_line_width(cr, 1);
        cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
        for (size_t o = 0; o < n; o++) {
                PlotEventKind k = order[o];
                set_rgb(cr, event_rgb(k));
                for (unsigned i = 0; i < p->n_buckets; i++) {
                        const Bucket *b = &p->b[i];
                        if (b->ev.count[k] == 0)
                                continue;
                        const Group *owner = &l->groups[l->groups[l->group_of[i]].owner];
                        double x = x_crisp(x_of(r, b->event_t));
                        cairo_set_dash(cr, dash, (b->ev.dry & (1U << k)) ? 2 : 0, 0);
                        cairo_move_to(cr, x, row_top(r, owner->row) + 2);
                        cairo_line_to(cr, x, r->eta_bottom);
                        cairo_stroke(cr);
                }
        }
        cairo_set_dash(cr, NULL, 0, 0);
}

static void draw_event_labels(const Render *r, const EventLayout *l) {
        cairo_t *cr = r->cr;

        font(cr, LABEL_FONT, false);
        for (unsigned i = 0; i < l->n; i++) {
                const Group *g = &l->groups[i];
                if (g->owner != i)
                        continue;
                LabelPart parts[_PLOT_EVENT_KIND_MAX];
                unsigned np = group_label(g, parts);
                double top = row_top(r, g->row);

                /* A white box: markers of labels in rows above pass behind it. */
                cairo_set_source_rgb(cr, 1, 1, 1);
                cairo_rectangle(cr, g->box_left + 1, top + 1, g->box_right - g->box_left - 1, r->row_h - 2);
                cairo_fill(cr);

                cairo_move_to(cr, g->box_left + LABEL_PAD, top + r->row_h - 4);
                for (unsigned j = 0; j < np; j++) {
                        if (j > 0) {
                                set_rgb(cr, RGB_MUTED);
                                cairo_show_text(cr, LABEL_SEP);
                        }
                        set_rgb(cr, event_text_rgb(parts[j].kind));
                        cairo_show_text(cr, parts[j].text);
                }
        }
}

/* ---- legend and annotations ---------------------------------------------------------------- */

typedef enum LegendStyle {
        LEGEND_LINE,
        LEGEND_DASHED,
        LEGEND_MARKER,
        LEGEND_BLOCK, /* a filled square: a part */
} LegendStyle;

typedef struct LegendEntry {
        const char *label;
        uint32_t rgb;
        LegendStyle style;
        double width;
} LegendEntry;

/* Lays the legend out in rows above the label band, and draws it unless only measuring;
 * returns how many rows it takes. */
static unsigned legend(const Render *r, const bool present[_PLOT_SERIES_MAX], const bool parts[_PART_MAX], bool draw) {
        const Plot *p = r->p;
        cairo_t *cr = r->cr;
        LegendEntry e[_PLOT_SERIES_MAX + _PLOT_EVENT_KIND_MAX + _PART_MAX];
        unsigned n = 0, rows = 1;

        for (PlotSeries s = 0; s < _PLOT_SERIES_MAX; s++)
                if (present[s])
                        e[n++] = (LegendEntry){
                                .label = series_name[s],
                                .rgb = series_rgb[s],
                                .style = s == PLOT_BUDGET ? LEGEND_DASHED : LEGEND_LINE,
                                .width = series_width(s),
                        };
        for (PlotEventKind k = 0; k < _PLOT_EVENT_KIND_MAX; k++)
                if (p->n_events[k] > 0)
                        e[n++] = (LegendEntry){
                                .label = event_legend(k), .rgb = event_rgb(k), .style = LEGEND_MARKER, .width = 3 };
        for (ExplainPart q = 0; q < _PART_MAX; q++)
                if (parts[q])
                        e[n++] = (LegendEntry){
                                .label = explain_part_label(q), .rgb = part_rgb[q], .style = LEGEND_BLOCK, .width = 10 };

        font(cr, 11.5, false);
        double x = r->left, y = r->legend_top + 9;
        for (unsigned i = 0; i < n; i++) {
                double swatch = e[i].style == LEGEND_MARKER || e[i].style == LEGEND_BLOCK ? 10 : 26;
                double w = swatch + 6 + text_width(cr, e[i].label) + 18;
                if (x + w > r->right && x > r->left) {
                        x = r->left;
                        y += 18;
                        rows++;
                }
                if (draw) {
                        static const double dash[] = { 7, 4 };
                        set_rgb(cr, e[i].rgb);
                        cairo_set_line_width(cr, e[i].width);
                        cairo_set_dash(cr, dash, e[i].style == LEGEND_DASHED ? 2 : 0, 0);
                        if (e[i].style == LEGEND_BLOCK) {
                                cairo_rectangle(cr, x, y - 8, 10, 10);
                                cairo_fill(cr);
                        } else if (e[i].style == LEGEND_MARKER) {
                                cairo_move_to(cr, x + 4.5, y - 9);
                                cairo_line_to(cr, x + 4.5, y + 5);
                        } else {
                                cairo_move_to(cr, x, y - 2);
                                cairo_line_to(cr, x + swatch, y - 2);
                        }
                        cairo_stroke(cr);
                        cairo_set_dash(cr, NULL, 0, 0);
                        set_rgb(cr, RGB_TEXT);
                        text_at(cr, x + swatch + 6, y + 2, e[i].label, 0);
                }
                x += w;
        }
        return rows;
}

/* Where the label of a threshold drawn at y goes: its baseline, above the line, or below it
 * when there is no room above. */
static double threshold_label_base(const Render *r, double y) {
        return y - 12 < r->eta_top + 1 ? y + 11 : y - 3;
}

/* On a light box, so that the time-left line does not run through it. */
static void threshold_label(const Render *r, double base, const char *text) {
        cairo_t *cr = r->cr;
        double w = text_width(cr, text);

        cairo_set_source_rgba(cr, 1, 1, 1, 0.8);
        cairo_rectangle(cr, r->left + 2, base - 9, w + 4, 11);
        cairo_fill(cr);
        set_rgb(cr, RGB_MUTED);
        text_at(cr, r->left + 4, base, text, 0);
}

static void draw_eta_panel_notes(const Render *r) {
        const Plot *p = r->p;
        cairo_t *cr = r->cr;
        char buf[96], t[FORMAT_TIMESPAN_MAX];

        /* The policy's thresholds, dotted, longest first; labels too close to the one above
         * share its line of text. */
        unsigned order[PLOT_MAX_THRESHOLDS];
        for (unsigned i = 0; i < p->n_thresholds; i++) {
                unsigned j = i;
                for (; j > 0 && p->threshold[order[j - 1]].eta < p->threshold[i].eta; j--)
                        order[j] = order[j - 1];
                order[j] = i;
        }
        font(cr, 10, false);
        char label[256] = "";
        double label_base = 0;
        for (unsigned i = 0; i < p->n_thresholds; i++) {
                static const double dot[] = { 2, 3 };
                const Threshold *th = &p->threshold[order[i]];
                double y = floor(y_of_eta(r, th->eta)) + 0.5;
                set_rgb(cr, RGB_MUTED);
                cairo_set_line_width(cr, 1);
                cairo_set_dash(cr, dot, 2, 0);
                cairo_move_to(cr, r->left, y);
                cairo_line_to(cr, r->right, y);
                cairo_stroke(cr);
                cairo_set_dash(cr, NULL, 0, 0);

                snprintf(buf, sizeof(buf), "%s %s", th->label, format_timespan(t, th->eta));
                if (label[0] != '\0' && threshold_label_base(r, y) - 9 < label_base + 3) {
                        size_t len = strlen(label);
                        snprintf(label + len, sizeof(label) - len, ", %s", buf);
                        continue;
                }
                if (label[0] != '\0')
                        threshold_label(r, label_base, label);
                snprintf(label, sizeof(label), "%s", buf);
                label_base = threshold_label_base(r, y);
        }
        if (label[0] != '\0')
                threshold_label(r, label_base, label);

        /* The panel's caption, and what the last sample predicted. */
        font(cr, 11, false);
        set_rgb(cr, RGB_TEXT);
        usec_t eta = p->last.value[PLOT_ETA];
        if (eta == USEC_INFINITY || eta == SIZE_UNKNOWN)
                snprintf(buf, sizeof(buf), "time left before the budget; at the end: not rising");
        else
                snprintf(buf, sizeof(buf), "time left before the budget; at the end: %s", format_timespan(t, eta));
        text_at(cr, r->right, r->eta_top - 6, buf, 1);

        if (eta != USEC_INFINITY && eta != SIZE_UNKNOWN) {
                double x = x_of(r, p->last.t), y = y_of_eta(r, eta);
                set_rgb(cr, PLOT_RGB_ETA);
                cairo_arc(cr, x, y, 3.5, 0, 2 * M_PI);
                cairo_fill(cr);
        }
}

static void draw_frame(const Render *r, double top, double bottom) {
        cairo_t *cr = r->cr;
        set_rgb(cr, RGB_FRAME);
        cairo_set_line_width(cr, 1);
        cairo_rectangle(cr, floor(r->left) + 0.5, floor(top) + 0.5, floor(r->right) - floor(r->left),
                        floor(bottom) - floor(top));
        cairo_stroke(cr);
}

static int plot_draw(const Plot *p, cairo_t *cr, double width, double height) {
        Render r = {
                .p = p,
                .cr = cr,
                .width = width,
                .height = height,
                .left = 84,
                .right = width - 24,
                .legend_top = 34,
                .row_h = 15,
        };
        bool present[_PLOT_SERIES_MAX] = {}, parts[_PART_MAX] = {};
        uint64_t top = 0;
        usec_t eta_lo = USEC_INFINITY, eta_hi = 0;
        int ret;

        /* What is there to draw. */
        for (unsigned i = 0; i < p->n_buckets; i++)
                for (PlotSeries s = 0; s < _PLOT_SERIES_MAX; s++) {
                        const Track *k = &p->b[i].track[s];
                        if (!k->known)
                                continue;
                        present[s] = true;
                        if (s == PLOT_ETA) {
                                eta_lo = MIN(eta_lo, k->min);
                                eta_hi = MAX(eta_hi, k->max);
                        } else
                                top = MAX(top, k->max);
                }
        for (unsigned i = 0; i < p->n_buckets; i++)
                if (p->b[i].has_parts) {
                        uint64_t sum = 0;
                        for (ExplainPart q = 0; q < _PART_MAX; q++) {
                                parts[q] = parts[q] || p->b[i].part[q] > 0;
                                sum += p->b[i].part[q];
                        }
                        top = MAX(top, sum);
                }
        r.have_eta = present[PLOT_ETA];
        r.span = MAX(p->t_end - p->t0, USEC_PER_MINUTE);
        r.gap = p->samples > 1 ? 5.0 * (double) (p->t_end - p->t0) / (double) (p->samples - 1) : INFINITY;
        choose_memory_axis(&r, top);
        choose_eta_axis(&r, eta_lo, eta_hi);

        /* Layout, top to bottom: title, legend, label rows, memory panel, time-left panel, time
         * axis. Placing the labels only needs the X axis. */
        _cleanup_(event_layout_done) EventLayout events = {};
        ret = place_events(&r, &events);
        if (ret < 0)
                return ret;
        r.rows = MAX(events.rows, 1U);
        r.band_top = r.legend_top + 18.0 * legend(&r, present, parts, false) + 4;
        r.main_top = r.band_top + r.rows * r.row_h + 2;
        r.eta_bottom = height - 58;
        r.eta_top = r.eta_bottom - 130;
        r.main_bottom = r.eta_top - 24;

        set_rgb(cr, 0xffffff);
        cairo_paint(cr);

        font(cr, 15, true);
        set_rgb(cr, RGB_TEXT);
        text_at(cr, r.left, 22, p->title ?: "memgov", 0);

        draw_memory_axis(&r);
        draw_eta_axis(&r);
        draw_time_axis(&r);

        for (ExplainPart q = 0; q < _PART_MAX; q++)
                if (parts[q])
                        draw_parts(&r, q);
        draw_markers(&r, &events);

        static const PlotSeries order[] = { PLOT_MEMORY_CURRENT, PLOT_MEMORY_HIGH, PLOT_MEMORY_MAX,
                                            PLOT_BUDGET,         PLOT_WORKING_SET, PLOT_ETA };
        for (size_t i = 0; i < ELEMENTSOF(order); i++)
                if (present[order[i]])
                        draw_series(&r, order[i]);

        draw_frame(&r, r.main_top, r.main_bottom);
        draw_frame(&r, r.eta_top, r.eta_bottom);
        draw_eta_panel_notes(&r);
        draw_event_labels(&r, &events);
        (void) legend(&r, present, parts, true);
        return 0;
}

/* ---- output -------------------------------------------------------------------------------- */

typedef struct Sink {
        FILE *f;
        int error; /* errno of the first failed write */
} Sink;

static cairo_status_t sink_write(void *closure, const unsigned char *data, unsigned int length) {
        Sink *s = closure;
        if (fwrite(data, 1, length, s->f) != length) {
                if (s->error == 0)
                        s->error = errno > 0 ? errno : EIO;
                return CAIRO_STATUS_WRITE_ERROR;
        }
        return CAIRO_STATUS_SUCCESS;
}

static int cairo_to_errno(cairo_status_t st, const Sink *sink) {
        if (st == CAIRO_STATUS_SUCCESS)
                return 0;
        if (st == CAIRO_STATUS_NO_MEMORY)
                return -ENOMEM;
        if (st == CAIRO_STATUS_WRITE_ERROR && sink->error > 0)
                return -sink->error;
        return -EIO;
}

int plot_render_to(Plot *p, PlotFormat format, FILE *f) {
        Sink sink = { .f = f };
        cairo_surface_t *surface;
        int r;

        if (p->samples == 0)
                return -ENODATA;
        if (format == PLOT_FORMAT_SVG) {
                surface = cairo_svg_surface_create_for_stream(sink_write, &sink, PLOT_WIDTH, PLOT_HEIGHT);
                cairo_svg_surface_set_document_unit(surface, CAIRO_SVG_UNIT_PX);
        } else if (format == PLOT_FORMAT_PNG)
                surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, PLOT_WIDTH, PLOT_HEIGHT);
        else
                return -EINVAL;
        r = cairo_to_errno(cairo_surface_status(surface), &sink);
        if (r < 0) {
                cairo_surface_destroy(surface);
                return r;
        }

        cairo_t *cr = cairo_create(surface);
        r = plot_draw(p, cr, PLOT_WIDTH, PLOT_HEIGHT);
        if (r >= 0)
                r = cairo_to_errno(cairo_status(cr), &sink);
        cairo_destroy(cr);

        if (r >= 0 && format == PLOT_FORMAT_PNG)
                r = cairo_to_errno(cairo_surface_write_to_png_stream(surface, sink_write, &sink), &sink);
        cairo_surface_finish(surface);
        if (r >= 0)
                r = cairo_to_errno(cairo_surface_status(surface), &sink);
        cairo_surface_destroy(surface);
        if (r >= 0 && fflush(f) != 0)
                r = negative_errno();
        if (r >= 0 && ferror(f))
                r = -EIO;
        return r < 0 ? r : 0;
}
