#!/usr/bin/env bash
# Packs taskplane (`npm pack`, whose prepack builds dist/), installs the tarball into an empty folder per
# Node version and runs test/pack/smoke.mjs there: on this machine's Node and on Node 24, which comes from
# the npm registry's `node` package (kept in ~/.cache/taskplane/, so only the first run downloads it).
# Each install builds better-sqlite3 for that Node's ABI, from source against that Node's own headers,
# or takes the addon an earlier run built for the same version and ABI (scripts/native-addon-cache.sh).
# Also type-checks test/pack/consumer.ts against the installed declaration files.
# Usage: test/pack/pack-smoke.sh [path/to/node ...]   (default: `node` and Node 24)
#        PACK_SMOKE_TARBALL=path/to/taskplane-x.y.z.tgz installs that tarball instead of packing one.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/test/pack"
work="$(mktemp -d "${TMPDIR:-/tmp}/taskplane-pack.XXXXXX")"
trap 'rm -rf "$work"' EXIT
npm_cli="$(dirname "$(readlink -f "$(command -v npm)")")/npm-cli.js"

node24() {
  local dir="${XDG_CACHE_HOME:-$HOME/.cache}/taskplane/node24"
  local bin="$dir/node_modules/node/bin/node"
  if [ ! -x "$bin" ] || [[ "$("$bin" --version 2>/dev/null)" != v24.* ]]; then
    npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$dir" node@24 >&2
  fi
  echo "$bin"
}

# The folder holding include/node/ for this Node binary: its install prefix, or for the registry's `node`
# package the platform package beside it.
headers() {
  local prefix
  prefix="$(dirname "$(dirname "$(readlink -f "$1")")")"
  if [ -f "$prefix/include/node/common.gypi" ]; then echo "$prefix"; return; fi
  for p in "$prefix"/node_modules/node-*; do
    if [ -f "$p/include/node/common.gypi" ]; then echo "$p"; return; fi
  done
  echo "pack smoke: no Node headers (include/node) found for $1" >&2
  return 1
}

nodes=("$@")
if [ ${#nodes[@]} -eq 0 ]; then nodes=("$(command -v node)" "$(node24)"); fi

if [ -n "${PACK_SMOKE_TARBALL:-}" ]; then
  # Packed by the caller (.ci/run packs while it lints, then runs this beside the tests).
  tarball="$PACK_SMOKE_TARBALL"
  echo "pack smoke: $(basename "$tarball"), packed by the caller"
else
  echo "pack smoke: npm pack"
  tarball="$work/$(cd "$root" && npm pack --silent --pack-destination "$work" | tail -n 1)"
fi
ls -l "$tarball"

# Installs run side by side: each builds better-sqlite3 from source, mostly one long compile of SQLite
# on one core, so two Node versions take about the time of one on a 2-core machine. An addon an earlier
# run compiled for the same better-sqlite3 version and Node ABI is taken from ~/.cache/taskplane/prebuilds
# instead (scripts/native-addon-cache.sh), the way prebuild-install takes a downloaded one; its download
# is pointed at a closed local port, so an addon not kept there is compiled, never fetched.
. "$root/scripts/native-addon-cache.sh"
install() {
  local node=$1 dir=$2
  mkdir -p "$dir"
  # A user's project: ESM, and better-sqlite3's install script allowed (npm 11 blocks dependency scripts).
  printf '{ "name": "pack-smoke", "private": true, "type": "module", "allowScripts": { "better-sqlite3": true } }\n' >"$dir/package.json"
  # This Node first on PATH, so install scripts (node-gyp) build for its ABI, against its own headers:
  # nothing is downloaded but packages from the npm registry. At a lower priority (nice): .ci/run runs
  # this beside the tests, and the compile must take only the CPU they leave, not slow them.
  (cd "$dir" && PATH="$(dirname "$node"):$PATH" npm_config_nodedir="$(headers "$node")" \
    npm_config_better_sqlite3_local_prebuilds="$addon_cache_dir" \
    npm_config_better_sqlite3_binary_host=http://127.0.0.1:9 npm_config_jobs=max \
    nice -n 10 "$node" "$npm_cli" install --no-audit --no-fund --loglevel=error "$tarball")
  if ! addon_loads "$node" "$dir"; then
    echo "pack smoke: better-sqlite3 does not load under $("$node" --version)"
    if [ "$(addon_origin "$node" "$dir")" = "kept by an earlier run" ] && [ -z "${3:-}" ]; then
      # A kept addon that does not load is dropped, and the install made again from source.
      echo "pack smoke: dropping the kept addon and installing again"
      addon_cache_drop "$node" "$(addon_installed_version "$node" "$dir")"
      rm -rf "$dir"
      install "$node" "$dir" again
      return
    fi
    return 1
  fi
  addon_origin "$node" "$dir" >"$dir.origin"
  addon_cache_save "$node" "$dir"
}

# Where an install's addon came from, for the log (before addon_cache_save keeps a new one).
addon_origin() { # node dir
  if addon_is_kept "$1" "$2"; then echo "kept by an earlier run"; else echo "compiled from source"; fi
}

start=$SECONDS
pids=()
for node in "${nodes[@]}"; do
  version="$("$node" --version)"
  echo "pack smoke: npm install <tarball> under Node $version"
  install "$node" "$work/install-$version" >"$work/install-$version.log" 2>&1 &
  pids+=($!)
done

status=0
first=1
for i in "${!nodes[@]}"; do
  node="${nodes[$i]}"
  version="$("$node" --version)"
  dir="$work/install-$version"
  if ! wait "${pids[$i]}"; then
    cat "$work/install-$version.log"
    echo "pack smoke: install failed under Node $version"
    status=1
    continue
  fi
  echo "pack smoke: installed under Node $version ($((SECONDS - start)) s since the installs started; better-sqlite3's addon $(cat "$dir.origin"))"
  if (cd "$dir" && PATH="$(dirname "$node"):$PATH" "$node" "$here/smoke.mjs"); then :; else status=1; fi
  if [ $first -eq 1 ]; then
    first=0
    # The declaration files, through the package's exports map, as a TypeScript user compiles against them.
    cp "$here/consumer.ts" "$dir/consumer.ts"
    cat >"$dir/tsconfig.json" <<JSON
{
  "compilerOptions": {
    "target": "ES2022", "module": "NodeNext", "moduleResolution": "NodeNext", "strict": true,
    "noEmit": true, "skipLibCheck": false, "types": ["node"], "typeRoots": ["$root/node_modules/@types"]
  },
  "files": ["consumer.ts"]
}
JSON
    if (cd "$dir" && node "$root/node_modules/typescript/bin/tsc" -p tsconfig.json); then
      echo "  ok  consumer.ts type-checks against the installed declarations"
    else
      echo "pack smoke: consumer.ts does not type-check against the installed package"
      status=1
    fi
  fi
done
exit $status
