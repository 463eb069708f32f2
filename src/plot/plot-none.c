/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memgov built without cairo (meson -Dplot=disabled, e.g. the container image, which never
 * draws): the plot API is there and says that no chart can be drawn. */
#include <errno.h>

#include "memgov/plot.h"

int plot_format_from_path(const char *path) {
        return -EOPNOTSUPP;
}

Plot *plot_new(void) {
        return NULL;
}

Plot *plot_free(Plot *p) {
        return NULL;
}

int plot_set_title(Plot *p, const char *title) {
        return -EOPNOTSUPP;
}

int plot_add_eta_threshold(Plot *p, usec_t eta, const char *label) {
        return -EOPNOTSUPP;
}

int plot_add_sample(Plot *p, const PlotPoint *pt) {
        return -EOPNOTSUPP;
}

int plot_add_event(Plot *p, usec_t t, PlotEventKind kind, uint64_t value, bool dry_run) {
        return -EOPNOTSUPP;
}

int plot_render_to(Plot *p, PlotFormat format, FILE *f) {
        return -EOPNOTSUPP;
}
