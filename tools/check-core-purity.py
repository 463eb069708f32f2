#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The pure core reads no clock, opens no file, makes no system call: every function it calls
from outside itself must be on this list of computations (memory, strings, numbers, the policy
parser over text in memory). Run by the build on libmemgov-core.a: a call to clock_gettime(),
open(), getenv() ... in src/core fails the build, with the symbol and the object that calls it.
   check-core-purity.py NM ARCHIVE STAMP"""
import subprocess
import sys

ALLOWED = {
    # memory and strings
    # (clang turns a memcmp whose result is only compared with zero into bcmp)
    'bcmp', 'calloc', 'free', 'memchr', 'memcmp', 'memcpy', 'memmove', 'memset', 'strcasecmp', 'strchr', 'strcmp',
    'strcpy', 'strlen', 'strncasecmp', 'strncmp', 'strnlen', 'strrchr', 'strstr', 'strspn', 'strcspn',
    'snprintf', 'vsnprintf', 'strtoul', 'strtoull', 'strtod', 'qsort', '__ctype_b_loc', '__ctype_tolower_loc',
    '__ctype_toupper_loc', 'tolower', 'toupper', 'isspace', 'isdigit', 'isalpha', 'isalnum', 'isxdigit', 'inet_pton',
    # numbers
    'llround', 'lround', 'fabs', 'sqrt', 'floor', 'ceil', 'log', 'log2', 'exp', 'pow', '__divti3', '__udivti3',
    # the policy parser reads text it is handed, through a callback
    'ini_parse_stream',
    # a broken invariant
    'abort', '__assert_fail', '__stack_chk_fail', '_GLOBAL_OFFSET_TABLE_',
}
# What the compiler adds: sanitizer and coverage instrumentation (the ASan and fuzz builds).
ALLOWED_PREFIXES = ('__asan_', '__ubsan_', '__lsan_', '__msan_', '__sanitizer_', '__sancov_')


def main():
    nm, archive, stamp = sys.argv[1:4]
    out = subprocess.run([nm, '--defined-only', '-A', archive], check=True, capture_output=True, text=True).stdout
    defined = {line.split()[-1] for line in out.splitlines() if line.strip()}
    out = subprocess.run([nm, '-u', '-A', archive], check=True, capture_output=True, text=True).stdout
    bad = []
    for line in out.splitlines():
        fields = line.split()
        if not fields:
            continue
        sym = fields[-1]
        if sym not in defined and sym not in ALLOWED and not sym.startswith(ALLOWED_PREFIXES):
            bad.append((fields[0].rstrip(':').split(':')[-1], sym))
    if bad:
        for obj, sym in sorted(set(bad)):
            print(f'{obj}: calls {sym}(), which the pure core may not (src/core does no I/O and reads no clock: '
                  f'pass the value in)', file=sys.stderr)
        sys.exit(1)
    with open(stamp, 'w') as f:
        f.write('pure\n')


main()
