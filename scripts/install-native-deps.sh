#!/usr/bin/env bash
# Installs what the native build needs beyond the README's toolchain when it is missing:
# ZooKeeper's C client and headers (Debian's libzookeeper-mt-dev), through which brokers started
# with --zookeeper join a cluster. The native module's Maven build runs it before CMake (so
# `mvn -B verify` and the quick start work on a fresh machine), and so does .ci/run before
# clang-tidy. Uses apt-get, as root or through sudo; does nothing when the header is there.
set -euo pipefail

HEADER=/usr/include/zookeeper/zookeeper.h
PACKAGE=libzookeeper-mt-dev

if [[ -e $HEADER ]]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-native-deps: $HEADER is missing and there is no apt-get here: install" \
    "ZooKeeper's C client with its headers (libzookeeper_mt) and build again" >&2
  exit 1
fi
sudo=()
[[ $(id -u) == 0 ]] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
echo "install-native-deps: installing $PACKAGE (ZooKeeper's C client) with apt-get"
# Package lists of a fresh machine may be missing or stale: update only when the install fails.
if ! "${sudo[@]}" apt-get install -y -q --no-install-recommends "$PACKAGE"; then
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "$PACKAGE"
fi
