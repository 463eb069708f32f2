/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/action.h"
#include "memgov/explain.h"

#include <stdio.h>

#include "memgov/macro.h"

/* Charts of a run: memory over time, the actions taken, and the time left before the budget.
 *
 * The plot knows nothing of the engine: its caller feeds it points (the figures of one sample
 * and what the engine made of it) and events (an action, an observed OOM kill), then renders.
 * Memory stays bounded however long the trace: points are folded into at most PLOT_BUCKETS time
 * buckets keeping the first, last, minimum and maximum of every series, and the buckets double
 * in length whenever the trace outgrows them. A week of 1 s samples draws as fast as an hour. */

typedef enum PlotSeries {
        PLOT_WORKING_SET,
        PLOT_MEMORY_CURRENT,
        PLOT_MEMORY_HIGH,
        PLOT_MEMORY_MAX,
        PLOT_BUDGET,
        PLOT_ETA, /* microseconds to the budget, drawn in the lower panel */
        _PLOT_SERIES_MAX,
} PlotSeries;

/* An event on the chart: an action (its ActionKind; colours and labels from the registry), or
 * an OOM kill, observed, not an action. */
typedef unsigned PlotEventKind;
#define PLOT_EVENT_OOM_KILL  ((PlotEventKind) _ACTION_KIND_MAX)
#define _PLOT_EVENT_KIND_MAX (_ACTION_KIND_MAX + 1)

/* The colours, as 0xRRGGBB. Every one is drawn opaque and pixel-aligned where it matters, so a
 * PNG holds these exact values: the tests look for them. */
#define PLOT_RGB_WORKING_SET    0x1f77b4
#define PLOT_RGB_MEMORY_CURRENT 0x17becf
#define PLOT_RGB_MEMORY_HIGH    0xff7f0e
#define PLOT_RGB_MEMORY_MAX     0xd62728
#define PLOT_RGB_BUDGET         0x9467bd
#define PLOT_RGB_ETA            0x2ca02c
#define PLOT_RGB_EVENT_OOM_KILL 0x8c2d04
/* memgov explain's parts, filled under memory.current (light: the lines stay readable). */
#define PLOT_RGB_PART_PAGE_CACHE      0xe5e5e5
#define PLOT_RGB_PART_SHMEM           0xd9d2e9
#define PLOT_RGB_PART_KERNEL          0xcfcfcf
#define PLOT_RGB_PART_OTHER_PROCESSES 0xf0e0c8
#define PLOT_RGB_PART_POOL            0xc6dbef
#define PLOT_RGB_PART_SERVER_OTHER    0xd4ead0
#define PLOT_RGB_PART_SESSIONS        0xfdd9b5
#define PLOT_RGB_PART_IN_USE_UNCOUNTED 0xe6d3c3
#define PLOT_RGB_PART_ALLOCATOR_FREE  0xf7c6c7
#define PLOT_RGB_PART_UNACCOUNTED     0xf5f0c8

#define PLOT_BUCKETS 2048
#define PLOT_WIDTH   1280
#define PLOT_HEIGHT  800

/* One sample's figures. SIZE_UNKNOWN (or SIZE_UNLIMITED: "max" has no place on a chart) leaves
 * a series out at that point; USEC_INFINITY in value[PLOT_ETA] means "not rising". */
typedef struct PlotPoint {
        usec_t t;           /* monotonic time: the X axis */
        usec_t wall;        /* wall clock at t, 0 = none: the axis then counts from the start */
        int32_t utc_offset; /* seconds east of UTC at wall */
        uint64_t value[_PLOT_SERIES_MAX];
        /* memgov explain's parts at t (a trace with its figures), stacked under memory.current */
        bool has_parts;
        uint64_t part[_PART_MAX];
} PlotPoint;

typedef enum PlotFormat {
        PLOT_FORMAT_SVG,
        PLOT_FORMAT_PNG,
        _PLOT_FORMAT_MAX,
} PlotFormat;

#define PLOT_FORMATS_SUPPORTED ".svg, .png"

/* The format a file name asks for (its extension, in any case), or -EINVAL. */
int plot_format_from_path(const char *path);

typedef struct Plot Plot;

Plot *plot_new(void);
Plot *plot_free(Plot *p);

/* Shown above the chart, e.g. the trace's name. */
int plot_set_title(Plot *p, const char *title);
/* A threshold drawn across the time-left panel, e.g. 6h labelled "trim.eta". Up to 8. */
int plot_add_eta_threshold(Plot *p, usec_t eta, const char *label);

/* Points come in time order (t never goes backwards). */
int plot_add_sample(Plot *p, const PlotPoint *pt);
/* An event at time t (at or after the first point). value: the new memory.high or memory.max
 * for an action that sets a limit, else SIZE_UNKNOWN. dry_run: the action was
 * only logged ("would trim"): drawn dashed. */
int plot_add_event(Plot *p, usec_t t, PlotEventKind kind, uint64_t value, bool dry_run);

/* Draws the chart into f (which stays open) in the given format. -ENODATA without points,
 * -EIO (errno kept when it says more) when writing failed. */
int plot_render_to(Plot *p, PlotFormat format, FILE *f);
