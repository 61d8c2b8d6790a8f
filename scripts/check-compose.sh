#!/usr/bin/env bash
# Validates docker/docker-compose.yml without a Docker engine: Debian's docker-compose (v1) parses
# and normalizes it, then scripts/compose_invariants.py asserts what push mode needs (TaskManager
# in the broker's IPC namespace, shm_size raised, connector in /opt/flink/lib, --mode push) and
# that the job reads what its producer writes (YsbProducer for ysb, nearstream-perf for count and
# filter; one stream, one ad -> campaign table, submitted once there is data).
# The images themselves are not built here: that needs an engine (docker/README.md).
set -euo pipefail

cd "$(dirname "$0")/.."
COMPOSE="${COMPOSE:-docker-compose}"
compose_file=docker/docker-compose.yml

if ! command -v "$COMPOSE" >/dev/null 2>&1; then
  echo "check-compose: '$COMPOSE' not found." >&2
  echo "  Install it (Debian: apt-get install -y --no-install-recommends docker-compose)," >&2
  echo "  or point COMPOSE at a docker-compose binary." >&2
  exit 2
fi

# docker-compose's own interpreter has PyYAML (a dependency of the Debian package); a python3
# earlier on PATH (a virtualenv, pyenv) may not.
python=""
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c 'import yaml' >/dev/null 2>&1; then
    python="$candidate"
    break
  fi
done
if [[ -z $python ]]; then
  echo "check-compose: no python3 with PyYAML (apt-get install -y python3-yaml)." >&2
  exit 2
fi

# The defaults are what is checked: the tunables (${NAME:-default} in the file) are unset, and
# no .env file is read.
unset_tunables=()
while read -r name; do unset_tunables+=(-u "$name"); done \
  < <(grep -o '\${[A-Za-z_][A-Za-z0-9_]*' "$compose_file" | cut -c3- | sort -u)
no_env_file=$(mktemp)
trap 'rm -f "$no_env_file"' EXIT
compose() {
  env "${unset_tunables[@]}" "$COMPOSE" --env-file "$no_env_file" -f "$compose_file" "$@"
}
# The same with WORKLOAD set (env applies -u first, then the assignment).
compose_for() {
  local workload=$1
  shift
  env "${unset_tunables[@]}" WORKLOAD="$workload" "$COMPOSE" --env-file "$no_env_file" \
    -f "$compose_file" "$@"
}

if ! compose config -q; then
  echo "check-compose: $compose_file is not a valid compose file (see above)." >&2
  exit 1
fi
compose config | "$python" scripts/compose_invariants.py
# The other workloads with a producer in the stack: the WORKLOAD variable must switch the job and
# the producer together (a default written into one place only would pass the check above).
for workload in count filter; do
  compose_for "$workload" config | "$python" scripts/compose_invariants.py --workload "$workload"
done
