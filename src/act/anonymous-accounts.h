/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>

#include "memgov/sql.h"

/* The server's anonymous accounts (User = ''), for the exemption by user name: the session list
 * shows the name a client logged in with, and through an anonymous account any client logs in
 * under any name, an exempt one too. Writes the accounts found ("''@'localhost', ...", cut to
 * fit) into accounts and returns how many (0: none); a negative errno and why when mysql.user
 * cannot be read (an account without SELECT on it). */
int anonymous_accounts(SqlConn *conn, char *accounts, size_t accounts_size, char *why, size_t why_size);
