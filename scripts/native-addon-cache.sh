# Sourced by .ci/run and test/pack/pack-smoke.sh: better-sqlite3's compiled addon, kept per package
# version and Node ABI in ~/.cache/taskplane/prebuilds, so only the first install on a machine compiles
# SQLite (one long compile per Node version).
#
# better-sqlite3 installs with `prebuild-install || node-gyp rebuild`. prebuild-install looks for the
# prebuilt tarball in a local folder (npm_config_better_sqlite3_local_prebuilds) before downloading it;
# the tarball kept here is the one an earlier install on this machine compiled from source, packed under
# the name and layout prebuild-install expects (build/Release/better_sqlite3.node). When none is kept,
# the install compiles from source, as before, and the result is kept for the next one.

addon_cache_dir="${XDG_CACHE_HOME:-$HOME/.cache}/taskplane/prebuilds"

# The tarball name prebuild-install looks for: better-sqlite3-v<version>-node-v<abi>-<platform>-<arch>.tar.gz
# (glibc; a musl system adds its libc, and simply misses the cache).
addon_cache_name() { # node version
  "$1" -e 'console.log(`better-sqlite3-v${process.argv[1]}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`)' "$2"
}

# The better-sqlite3 version a lockfile (or an installed package tree) pins.
addon_locked_version() { # dir-with-package-lock.json
  node -e 'const l = require(process.argv[1] + "/package-lock.json"); console.log(l.packages["node_modules/better-sqlite3"]?.version ?? "")' "$1" 2>/dev/null
}

# The better-sqlite3 version installed in a project.
addon_installed_version() { # node project-dir
  "$1" -p 'require(process.argv[1]).version' "$2/node_modules/better-sqlite3/package.json" 2>/dev/null
}

# Prints the environment assignment that points prebuild-install at the kept tarball, or nothing.
addon_cache_env() { # node version
  [ -n "$2" ] || return 0
  if [ -f "$addon_cache_dir/$(addon_cache_name "$1" "$2")" ]; then
    echo "npm_config_better_sqlite3_local_prebuilds=$addon_cache_dir"
  fi
}

# Whether the addon installed in a project loads under a Node: a kept tarball that does not is dropped.
addon_loads() { # node project-dir
  (cd "$2" && "$1" -e 'const D = require("better-sqlite3"); new D(":memory:").prepare("select 1").get()') >/dev/null 2>&1
}

# Whether a project's addon is the one kept for it (so it came from the cache, or is kept already).
addon_is_kept() { # node project-dir
  local built="$2/node_modules/better-sqlite3/build/Release/better_sqlite3.node" kept
  kept="$addon_cache_dir/$(addon_cache_name "$1" "$(addon_installed_version "$1" "$2")")"
  [ -f "$built" ] && [ -f "$kept" ] && tar -xzOf "$kept" build/Release/better_sqlite3.node 2>/dev/null | cmp -s - "$built"
}

# Keeps the addon a project has (one that loads), unless the same one is kept already.
addon_cache_save() { # node project-dir
  local dir="$2/node_modules/better-sqlite3" version name
  [ -f "$dir/build/Release/better_sqlite3.node" ] || return 0
  addon_is_kept "$1" "$2" && return 0
  version="$(addon_installed_version "$1" "$2")"
  name="$(addon_cache_name "$1" "$version")"
  mkdir -p "$addon_cache_dir"
  tar -czf "$addon_cache_dir/.$name.$$" -C "$dir" build/Release/better_sqlite3.node &&
    mv "$addon_cache_dir/.$name.$$" "$addon_cache_dir/$name"
}

# Drops a kept tarball (it did not load).
addon_cache_drop() { # node version
  rm -f "$addon_cache_dir/$(addon_cache_name "$1" "$2")"
}
