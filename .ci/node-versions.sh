#!/usr/bin/env bash
# Runs the test suite (vitest) again on every supported Node major besides the one `npm test` just used.
# Node comes from the npm registry (the node-linux-<arch> package holds the release: bin/node and the headers
# in include/node), so nothing is downloaded from anywhere else. Native modules (better-sqlite3 12 for Node 20, and our NVML
# addon) are rebuilt per version with node-gyp pointed at that release's headers, cached per version, and the
# default node's binaries are put back when this script ends. TypeScript, lint and the build ran once already.
#
#   .ci/node-versions.sh                     # every version below
#   TG_NODE_VERSIONS="22.23.3" .ci/node-versions.sh
#   TG_VITEST_ARGS="test/collector/store" .ci/node-versions.sh   # a part of the suite only
set -euo pipefail
cd "$(dirname "$0")/.."

# better-sqlite3: Node 20 runs release 12 (compiled here per Node version); Node >= 22 runs release 13, the
# optional dependency better-sqlite3-napi (Node-API, prebuilt in the package), which npm leaves out when the
# default node is 20, so it is unpacked here for those runs and removed again at the end
# (collector/store/sqlite-driver.ts says why both).
read -r -a versions <<<"${TG_NODE_VERSIONS:-20.20.2 22.23.3 24.21.0}"
# The fuzz suites ran their full 10,000 cases per endpoint in npm test; here a tenth keeps CI within its time.
export TG_FUZZ_RUNS="${TG_FUZZ_RUNS:-1000}"
cache="${TG_CI_CACHE:-$HOME/.cache/tailguard-ci}"
mkdir -p "$cache"
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64) arch=arm64 ;;
  *) echo "ci: no Node package for $(uname -m) in the registry; skipping the other Node versions"; exit 0 ;;
esac
node_gyp="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"
current="$(node -p process.versions.node)"
addons=(node_modules/better-sqlite3/build/Release/better_sqlite3.node build/Release/tailguard_nvml.node)
# What decides whether cached binaries still fit: the module versions and our addon's sources.
sources_key="$(cat node_modules/better-sqlite3/package.json binding.gyp native/*.cc native/*.h 2>/dev/null | sha256sum | cut -c1-16)"

backup="$(mktemp -d)"
for f in "${addons[@]}"; do
  mkdir -p "$backup/$(dirname "$f")"
  cp -p "$f" "$backup/$f"
done
napi_dir=node_modules/better-sqlite3-napi
napi_added=0
restore() {
  for f in "${addons[@]}"; do
    mkdir -p "$(dirname "$f")"
    cp -p "$backup/$f" "$f"
  done
  rm -rf "$backup"
  if [ "$napi_added" = 1 ]; then rm -rf "$napi_dir"; fi
}
# The release of better-sqlite3-napi that package-lock.json pins.
napi_version="$(node -p "require('./package-lock.json').packages['node_modules/better-sqlite3-napi']?.version ?? ''")"
ensure_napi() {
  [ -f "$napi_dir/package.json" ] && return 0
  [ -n "$napi_version" ] || { echo "ci: package-lock.json has no better-sqlite3-napi"; return 1; }
  local tgz
  tgz="$(cd "$cache" && npm pack --silent "better-sqlite3@$napi_version" | tail -n1)"
  mkdir -p "$napi_dir"
  tar -xzf "$cache/$tgz" -C "$napi_dir" --strip-components=1
  rm -f "$cache/$tgz"
  napi_added=1
  echo "ci: unpacked better-sqlite3 $napi_version as $napi_dir for Node >= 22"
}
trap restore EXIT

failed=()
summary=()
for v in "${versions[@]}"; do
  if [ "${v%%.*}" = "${current%%.*}" ]; then
    echo "ci: node $v: skipped, the default node ($current) ran the suite in npm test"
    continue
  fi
  home="$cache/node-v$v-linux-$arch"
  if [ ! -x "$home/bin/node" ]; then
    echo "ci: node $v: fetching node-linux-$arch@$v from the npm registry"
    mkdir -p "$home"
    tgz="$(cd "$cache" && npm pack --silent "node-linux-$arch@$v" | tail -n1)"
    tar -xzf "$cache/$tgz" -C "$home" --strip-components=1
    rm -f "$cache/$tgz"
  fi
  major="${v%%.*}"
  # Node 20 needs better-sqlite3 12 built for it; Node >= 22 loads release 13 (Node-API, prebuilt) instead.
  mine=("${addons[@]}")
  if [ "$major" -ge 22 ]; then
    ensure_napi || { failed+=("$v (better-sqlite3-napi)"); continue; }
    mine=("${addons[1]}")
  fi
  built="$home/addons-$sources_key"
  missing=0
  for f in "${mine[@]}"; do [ -f "$built/$f" ] || missing=1; done
  if [ "$missing" = 1 ]; then
    echo "ci: node $v: building native modules against $home/include/node"
    t0=$SECONDS
    log="$(mktemp)"
    if ! {
      [ "$major" -ge 22 ] || (
        export PATH="$home/bin:$PATH"
        cd node_modules/better-sqlite3 && node "$node_gyp" rebuild --release --jobs=max --nodedir="$home"
      )
    } >"$log" 2>&1 || ! (
      export PATH="$home/bin:$PATH"
      node "$node_gyp" rebuild --release --nodedir="$home"
    ) >>"$log" 2>&1; then
      tail -n 40 "$log"
      echo "ci: node $v: native modules failed to build (log above)"
      failed+=("$v (native build)")
      rm -f "$log"
      continue
    fi
    rm -f "$log"
    for f in "${mine[@]}"; do
      mkdir -p "$built/$(dirname "$f")"
      cp -p "$f" "$built/$f"
    done
    echo "ci: node $v: native modules built in $((SECONDS - t0)) s"
  fi
  for f in "${mine[@]}"; do
    mkdir -p "$(dirname "$f")"
    cp -p "$built/$f" "$f"
  done

  echo "ci: node $v: vitest run"
  t0=$SECONDS
  # As `npm test`: the timed tests (the two load steps, the fleet page's first load) alone, one after the other, after the rest.
  # Besides the usual output, a JSON report per run: a failure is named again at the very end of this script's
  # output, where a CI log that keeps only its tail still shows it.
  reports="$(mktemp -d)"
  vt=(node node_modules/vitest/vitest.mjs run --reporter=default --reporter=json)
  if [ -n "${TG_VITEST_ARGS:-}" ]; then
    # shellcheck disable=SC2086 # TG_VITEST_ARGS is a list of paths or flags
    run_suite() { PATH="$home/bin:$PATH" "${vt[@]}" --outputFile.json="$reports/1.json" ${TG_VITEST_ARGS}; }
  else
    run_suite() {
      PATH="$home/bin:$PATH" "${vt[@]}" --outputFile.json="$reports/1.json" --exclude test/e2e/load-step.test.ts --exclude test/e2e/start-demo-step.test.ts --exclude test/dashboard/fleet-load.e2e.test.ts &&
        PATH="$home/bin:$PATH" "${vt[@]}" --outputFile.json="$reports/2.json" --no-file-parallelism test/e2e/load-step.test.ts test/e2e/start-demo-step.test.ts test/dashboard/fleet-load.e2e.test.ts
    }
  fi
  if run_suite; then
    summary+=("node $v: passed in $((SECONDS - t0)) s")
  else
    summary+=("node $v: FAILED after $((SECONDS - t0)) s")
    failed+=("$v")
    while IFS= read -r line; do summary+=("  $line"); done < <(node .ci/failures.mjs "$reports"/*.json)
  fi
  rm -rf "$reports"
done

for line in "${summary[@]}"; do echo "ci: $line"; done
if [ ${#failed[@]} -gt 0 ]; then
  echo "ci: failed on node ${failed[*]}"
  exit 1
fi
