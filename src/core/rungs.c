/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The ladder's rungs, each at its level: the one list of them. */
#include "engine-internal.h"

extern const Rung rung_trim, rung_throttle, rung_admit, rung_reset, rung_pool, rung_restart;

const Rung *const engine_rungs[_LEVEL_MAX] = {
        [LEVEL_TRIM] = &rung_trim,   [LEVEL_THROTTLE] = &rung_throttle, [LEVEL_ADMIT] = &rung_admit,
        [LEVEL_RESET] = &rung_reset, [LEVEL_POOL] = &rung_pool,         [LEVEL_RESTART] = &rung_restart,
};

const Rung *engine_rung(Level l) {
        return l > LEVEL_NORMAL && l < _LEVEL_MAX ? engine_rungs[l] : NULL;
}
