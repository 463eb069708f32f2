#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The quick start: installs what memgov needs, builds it, and shows what memgov would have done
# on a recorded trace of a MariaDB server whose memory grew 850 MB/h, with the embedded default
# policy and a 32G budget.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-deps.sh
./scripts/build.sh build >/dev/null
exec ./build/memgov replay --budget 32G tests/replay/mariadb-retention.csv
