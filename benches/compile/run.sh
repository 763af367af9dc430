#!/usr/bin/env bash
# Compile-time benchmark: tool-runtime's #[tool] against rmcp's #[tool_router]/#[tool].
#
#   benches/compile/run.sh [N...]          (default N: 50 200 800)
#
# Environment:
#   R=5                 timed rebuilds per crate (median and min are reported)
#   VARIANTS="..."      extra `ours` variants to time beside the benchmark
#                       (no-docs no-check no-registry plain; see gen.py)
#   BENCH_DIR=...       where crates and results go (default target/compile-bench)
#   REV=<git rev>       benchmark tool-runtime as committed at REV (a `git archive`
#                       snapshot under BENCH_DIR) instead of the working tree, which
#                       others may be editing while the benchmark runs
#
# For each N it generates ours_N and rmcp_N (gen.py), builds each once (this
# checks the generated code compiles and warms the dependencies in one shared
# target dir per kind), then times R rebuilds of only the generated crate:
# `touch src/lib.rs` + `CARGO_INCREMENTAL=0 cargo build` (debug profile).
# Runs of the two kinds alternate, so background load hits both alike.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bench=${BENCH_DIR:-$root/target/compile-bench}
runs=${R:-5}
variants=${VARIANTS:-}
if (($# > 0)); then ns=("$@"); else ns=(50 200 800); fi

# The copy of the repository the `ours` crates build against.
if [[ -n ${REV:-} ]]; then
    sha=$(git -C "$root" rev-parse --short "$REV^{commit}")
    workspace=$bench/src-$sha
    if [[ ! -d $workspace ]]; then
        mkdir -p "$workspace.tmp"
        git -C "$root" archive --format=tar "$sha" | tar -x -C "$workspace.tmp"
        mv "$workspace.tmp" "$workspace"
    fi
else
    workspace=$root
fi

export CARGO_INCREMENTAL=0 # for every build, so warm builds and timed builds share fingerprints
mkdir -p "$bench"
raw="$bench/raw.csv"
summary="$bench/results.csv"
echo "n,crate,run,seconds" >"$raw"

log() { printf '%s\n' "$*" >&2; }

target_of() { # crate name -> its kind's shared target dir
    case $1 in
        ours_*) echo "$bench/target-ours" ;;
        rmcp_*) echo "$bench/target-rmcp" ;;
    esac
}

build() { # crate [cargo args...]: builds, output to $bench/logs/<crate>.log
    local crate=$1
    shift
    mkdir -p "$bench/logs"
    (cd "$bench/$crate" && CARGO_TARGET_DIR=$(target_of "$crate") cargo build "$@") \
        </dev/null >"$bench/logs/$crate.log" 2>&1
}

# Warm build: checks the crate compiles and builds its dependencies. A crate
# that does not compile is reported (row FAIL) and not timed.
warm() {
    local crate=$1
    log "== warm build of $crate"
    if ! build "$crate"; then
        log "!! $crate does not compile (log: $bench/logs/$crate.log):"
        grep -m1 -A3 '^error' "$bench/logs/$crate.log" >&2 || tail -n 20 "$bench/logs/$crate.log" >&2
        return 1
    fi
}

# One timed rebuild of only the generated crate; prints seconds.
# An untimed build first catches up with any dependency that changed (other
# people may be editing tool-runtime); a timed build that still compiled more
# than one crate is discarded and retried.
timed() {
    local crate=$1 attempt start end compiled
    for attempt in 1 2 3; do
        build "$crate" || { tail -n 40 "$bench/logs/$crate.log" >&2; exit 1; }
        touch "$bench/$crate/src/lib.rs"
        start=$(date +%s.%N)
        build "$crate" || { tail -n 40 "$bench/logs/$crate.log" >&2; exit 1; }
        end=$(date +%s.%N)
        compiled=$(grep -c '^ *Compiling ' "$bench/logs/$crate.log" || true)
        if [[ $compiled == 1 ]]; then
            python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.3f}')" "$start" "$end"
            return
        fi
        log "   ($crate: $compiled crates compiled, not 1; retrying)"
    done
    log "!! $crate: could not time a rebuild of the crate alone"
    exit 1
}

crates_for() { # n -> the crates to time for it
    local n=$1 v
    echo "ours_$n"
    echo "rmcp_$n"
    for v in $variants; do echo "ours_${n}_${v//-/_}"; done
}

log "tool-runtime: $workspace${REV:+ ($REV = $sha)}"
log "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
for n in "${ns[@]}"; do
    python3 "$here/gen.py" ours "$n" "$bench/ours_$n" --workspace "$workspace"
    python3 "$here/gen.py" rmcp "$n" "$bench/rmcp_$n" --workspace "$workspace"
    for v in $variants; do
        python3 "$here/gen.py" ours "$n" "$bench/ours_${n}_${v//-/_}" --variant "$v" --workspace "$workspace"
    done
    crates=()
    while read -r crate; do
        if warm "$crate"; then crates+=("$crate"); else echo "$n,$crate,0,FAIL" >>"$raw"; fi
    done < <(crates_for "$n")
    for ((i = 1; i <= runs; i++)); do
        for crate in ${crates[@]+"${crates[@]}"}; do
            s=$(timed "$crate")
            log "   $crate run $i: ${s}s"
            echo "$n,$crate,$i,$s" >>"$raw"
        done
    done
done
log "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

# The table (stdout) and the summary CSV.
python3 - "$raw" "$summary" <<'PY'
import csv, statistics, sys
from collections import defaultdict
raw, summary = sys.argv[1], sys.argv[2]
times = defaultdict(list)
order = []
for row in csv.DictReader(open(raw)):
    key = (int(row["n"]), row["crate"])
    if key not in times:
        order.append(key)
    times[key]  # a crate that failed has no times
    if row["seconds"] != "FAIL":
        times[key].append(float(row["seconds"]))
# None: the crate did not compile.
stat = {k: (statistics.median(v), min(v), len(v)) if v else None for k, v in times.items()}

def cell(s, i, width):
    return f"{'FAIL' if s is None else f'{s[i]:.2f}':>{width}}"

def ratio(a, b, i, width=0):
    return f"{'-' if a is None or b is None else f'{a[i] / b[i]:.2f}':>{width}}"
rows = []
for n in sorted({n for n, _ in order}):
    o, r = stat.get((n, f"ours_{n}")), stat.get((n, f"rmcp_{n}"))
    rows.append((n, o, r, [(c, stat[(n2, c)]) for n2, c in order if n2 == n and c not in (f"ours_{n}", f"rmcp_{n}")]))
with open(summary, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["n", "crate", "runs", "median_s", "min_s", "ratio_to_rmcp_median", "ratio_to_rmcp_min"])
    for n, o, r, extra in rows:
        for crate, s in [(f"ours_{n}", o), (f"rmcp_{n}", r)] + extra:
            if s is None:
                w.writerow([n, crate, 0, "FAIL", "FAIL", "", ""])
            else:
                w.writerow([n, crate, s[2], f"{s[0]:.3f}", f"{s[1]:.3f}", ratio(s, r, 0), ratio(s, r, 1)])
runs = max((s[2] for s in stat.values() if s), default=0)
print(f"Rebuild of the generated crate only (debug, CARGO_INCREMENTAL=0), seconds over {runs} runs")
print()
print(f"| {'N':>5} | {'ours median':>11} | {'ours min':>8} | {'rmcp median':>11} | {'rmcp min':>8} | {'ours/rmcp (median)':>18} | {'ours/rmcp (min)':>15} |")
print(f"|{'-' * 7}|{'-' * 13}|{'-' * 10}|{'-' * 13}|{'-' * 10}|{'-' * 20}|{'-' * 17}|")
for n, o, r, _ in rows:
    print(f"| {n:>5} | {cell(o, 0, 11)} | {cell(o, 1, 8)} | {cell(r, 0, 11)} | {cell(r, 1, 8)} | {ratio(o, r, 0, 18)} | {ratio(o, r, 1, 15)} |")
extras = [(n, c, s, r) for n, _, r, extra in rows for c, s in extra]
if extras:
    print()
    print(f"| {'N':>5} | {'variant':<28} | {'median':>6} | {'min':>6} | {'/rmcp (median)':>14} |")
    print(f"|{'-' * 7}|{'-' * 30}|{'-' * 8}|{'-' * 8}|{'-' * 16}|")
    for n, c, s, r in extras:
        print(f"| {n:>5} | {c:<28} | {cell(s, 0, 6)} | {cell(s, 1, 6)} | {ratio(s, r, 0, 14)} |")
print()
print(f"CSV: {summary} (every run: {raw})")
if any(s is None for s in stat.values()):
    print("FAIL: the crate did not compile; see the logs/ folder beside the CSV.")
PY
