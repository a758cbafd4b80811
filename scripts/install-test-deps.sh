#!/bin/sh
# What the install and the test suite need beyond PyPI: a C compiler and Python's headers (pip
# compiles the Cython kernels when it installs the package), and Debian's chromium, which the
# dashboard's browser tests drive through Playwright (Playwright cannot download its own browsers
# here). As root (CI) it installs what is missing with apt-get; elsewhere it says how, and the
# browser tests skip with that hint (the install itself cannot do without the compiler).
set -eu
missing=""
command -v cc >/dev/null 2>&1 || missing="$missing gcc libc6-dev"
python3 -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
  || missing="$missing python3-dev"
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || missing="$missing chromium"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "install-test-deps: installing$missing" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  # shellcheck disable=SC2086 # one word per package
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing >/dev/null
else
  echo "install-test-deps: missing$missing and not root: 'sudo apt-get install$missing' (a C compiler and" \
    "Python's headers build the kernels; chromium enables the browser tests)" >&2
fi
