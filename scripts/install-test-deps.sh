#!/bin/sh
# What the test suite needs beyond PyPI: Debian's chromium, which the dashboard's browser tests
# drive through Playwright (Playwright cannot download its own browsers here). As root (CI) it
# installs it with apt-get; elsewhere it says how, and the browser tests skip with that hint.
set -eu
if command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "install-test-deps: installing Debian's chromium for the browser tests" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null
else
  echo "install-test-deps: no chromium and not root; 'sudo apt-get install chromium' enables the browser tests" >&2
fi
