/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/policy.h"

/* Loads a policy file on top of *p (normally the embedded default). Running as root, a file
 * that is not root's or is writable by others is refused before it is parsed. Returns the
 * number of problems reported, or a negative errno for a file that could not be read (also
 * reported through report). *p changes only when the file is valid. */
int policy_load_file(const char *path, Policy *p, policy_report_t report, void *userdata);
