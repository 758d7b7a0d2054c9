#!/usr/bin/env bash
# Mutation testing of the core (issue 19), outside CI: mutmut 3 (https://mutmut.readthedocs.io)
# puts one small change (a "mutant") into addon/mcpx_core at a time and runs the fast tests
# (unit, schema, replay) that reach the mutated function; a mutant no test fails "survived".
#
#   scripts/mutation.sh [--fresh] [--sample N] [MODULE...]
#       mutate MODULEs (default: the five below) and print the per-module table. --sample N: run
#       a seeded random sample of N mutants per module (MCPX_MUTATION_SEED, default 19), not all.
#   scripts/mutation.sh --only NAME...   (re)run these mutants only (names or globs), print the table
#   scripts/mutation.sh --report [MODULE...]  the table of the last run
#   scripts/mutation.sh --survivors           the mutants of the last run no test killed, one per line
#   scripts/mutation.sh --show NAME           the diff of one mutant
#
# MODULE is a path under addon/mcpx_core; the default is framing/ session.py rewrite/
# downgrade.py rules/. Needs .venv with requirements-mutation.txt. Runs under `nice -n 19` with
# one worker (MCPX_MUTATION_WORKERS). Results stay in build/mutation (MCPX_MUTATION_DIR); a run
# without --fresh keeps the verdicts of mutants already run.
#
# Layout: mutmut names a mutant after its file's path but finds the active mutant by the
# function's __module__, so the package must sit at the top of a source root ("src/" is the one
# prefix it strips). The run happens in a staged copy: src/ = addon/, addon -> src (the tests,
# and the mitmdump they start, load ROOT/addon/mcpx.py and so get the mutated code too), tests/,
# flows/, and pyproject.toml with a [tool.mutmut] section. Each pytest run imports mcpx afresh
# (scripts/mutation_fresh.py): mutmut forks the runs from a process where mcpx's import-time
# tables and caches already hold the original code's results.
# "no tests": no fast test reaches the function in the pytest process (mutmut traces only that
# process: what runs only inside a mitmdump the tests start is not traced). Left out:
# the five tests that start mitmdump or `python -m mcpx` in a scratch folder (test_invalid_choice_
# is_refused_by_mitmdump, test_refused_at_startup_with_one_line, test_config_yaml_numbers,
# test_option_near_miss::test_refused_at_startup, test_check::test_no_argument_...): there the
# child cannot find mutmut's configuration while mutmut traces, and prints mutmut's error instead
# of mcpx's line. They test addons/options.py and the CLI, not a target module.
# Also left out: test_house.py::test_house_rules, which measures the source's classes and modules
# (mutmut writes every mutant of a function into its file, so the mutated source is many times larger).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${MCPX_PYTHON:-$ROOT/.venv/bin/python}"
STAGE="${MCPX_MUTATION_DIR:-$ROOT/build/mutation}"
WORKERS="${MCPX_MUTATION_WORKERS:-1}"
SEED="${MCPX_MUTATION_SEED:-19}"
DEFAULT_MODULES=(framing/ session.py rewrite/ downgrade.py rules/)
die() { echo "mutation.sh: $*" >&2; exit 1; }

"$PY" -c 'import mutmut' 2>/dev/null \
  || die "mutmut is missing: $PY -m pip install -r $ROOT/requirements-mutation.txt"

# mutmut's .meta files (mutant name -> exit code) of MODULEs under $1: "module<TAB>name<TAB>status" lines
statuses() {
  "$PY" - "$@" <<'EOF'
import json, pathlib, sys
from mutmut.stats import status_by_exit_code
base = pathlib.Path(sys.argv[1])
for module in sys.argv[2:]:
    pattern = module.rstrip("/") + ("/**/*.py.meta" if module.endswith("/") else ".meta")
    for meta in sorted(base.glob(pattern)):
        for name, code in sorted(json.loads(meta.read_text())["exit_code_by_key"].items()):
            print(f"{module}\t{name}\t{status_by_exit_code[code]}")
EOF
}

report() { # per-module table; the mutants run and not killed go to $STAGE/not-killed.txt
  statuses "$STAGE/mutants/src/mcpx_core" "$@" > "$STAGE/statuses.txt"
  grep -Pv '\t(killed|not checked)$' "$STAGE/statuses.txt" | cut -f2,3 > "$STAGE/not-killed.txt" || true
  "$PY" - "$STAGE/statuses.txt" "$@" <<'EOF'
import collections, sys
counts = collections.defaultdict(collections.Counter)
for line in open(sys.argv[1]):
    module, _, status = line.rstrip("\n").split("\t")
    counts[module][status] += 1
print("| module | mutants | run | killed | survived | no tests | other | score (killed / run) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for module in sys.argv[2:]:
    c = counts[module]
    total, run = sum(c.values()), sum(c.values()) - c["not checked"]
    other = run - c["killed"] - c["survived"] - c["no tests"]
    score = f"{100 * c['killed'] / run:.0f} %" if run else "-"
    print(f"| `{module}` | {total} | {run} | {c['killed']} | {c['survived']} | {c['no tests']} | {other} | {score} |")
EOF
}

stage() { # the tree mutmut works in; mutmut's own mutants/ (and its verdicts) is kept
  mkdir -p "$STAGE/src" "$STAGE/mutants"
  cp -a "$ROOT/addon/." "$STAGE/src/"
  ln -sfn src "$STAGE/addon"
  ln -sfn src "$STAGE/mutants/addon"
  local only="" m
  # what the fast tests read beside addon/: the tests import scripts/ (replicas.py), read the docs and
  # README, bench/RESULTS.md and .ci/ (test_docs.py), deploy/ (test_deploy.py) and flows/
  local copied=(tests flows scripts docs deploy bench .ci README.md requirements.lock)
  for m in "${copied[@]}"; do rm -rf "${STAGE:?}/$m"; cp -a "$ROOT/$m" "$STAGE/"; done
  cp -a "$ROOT/scripts/mutation_fresh.py" "$STAGE/"
  for m in "$@"; do
    case "$m" in */) only+="\"src/mcpx_core/${m}*\", " ;; *) only+="\"src/mcpx_core/$m\", " ;; esac
  done
  { cat "$ROOT/pyproject.toml"; cat <<EOF

[tool.mutmut]
source_paths = ["src/mcpx_core"]
only_mutate = [${only%, }]
also_copy = ["src/mcpx.py", "src/mcpx_pytest.py", ".ci/", "flows/", "mutation_fresh.py", "scripts/", "docs/", "deploy/", "bench/", "README.md", "requirements.lock"]
pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "mutation_fresh", "--deselect", "tests/unit/test_addon_options.py::test_invalid_choice_is_refused_by_mitmdump", "--deselect", "tests/unit/test_addon_options.py::test_refused_at_startup_with_one_line", "--deselect", "tests/unit/test_addon_options.py::test_config_yaml_numbers", "--deselect", "tests/unit/test_option_near_miss.py::test_refused_at_startup", "--deselect", "tests/replay/test_check.py::test_no_argument_prints_the_addon_path_and_errors_exit_2", "--deselect", "tests/unit/test_house.py::test_house_rules"]
pytest_add_cli_args_test_selection = ["tests/unit", "tests/schema", "tests/replay"]
EOF
  } > "$STAGE/pyproject.toml"
}

sample() { # N [MODULE...]: a seeded random sample of N mutant names per module (generated in a scratch copy)
  local n="$1" gen; shift
  gen="$(mktemp -d)"
  cp -a "$STAGE/src" "$STAGE/pyproject.toml" "$gen/"
  (cd "$gen" && nice -n 19 "$PY" -c 'from mutmut.mutation.trampoline import set_mutant_under_test
from mutmut.__main__ import create_mutants
set_mutant_under_test("mutant_generation"); create_mutants(1)' >/dev/null)
  statuses "$gen/mutants/src/mcpx_core" "$@" | "$PY" -c '
import collections, random, sys
n, seed = int(sys.argv[1]), sys.argv[2]
names = collections.defaultdict(list)
for line in sys.stdin:
    module, name, _ = line.rstrip("\n").split("\t")
    names[module].append(name)
for module, all_names in names.items():
    print("\n".join(sorted(random.Random(f"{seed}:{module}").sample(all_names, min(n, len(all_names))))))
' "$n" "$SEED"
  rm -rf "$gen"
}

run_mutmut() { # mutmut run [names...], timed
  local start=$SECONDS
  # every mcpx function runs through mutmut's trampoline: a replayed mitmdump is ~5x slower
  (cd "$STAGE" && MCPX_REPLAY_TIMEOUT="${MCPX_REPLAY_TIMEOUT:-600}" nice -n 19 "$PY" -m mutmut run --max-children "$WORKERS" "$@")
  echo "mutation.sh: mutmut run took $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s" \
       "with $WORKERS worker(s) on $(nproc) cores"
}

N=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --report) shift; report "${@:-${DEFAULT_MODULES[@]}}"; exit ;;
    --survivors) cat "$STAGE/not-killed.txt"; exit ;;
    --show) (cd "$STAGE" && "$PY" -m mutmut show "$2"); exit ;;
    --only) shift; [[ $# -gt 0 ]] || die "--only needs mutant names"
            stage "${DEFAULT_MODULES[@]}"; run_mutmut "$@"; report "${DEFAULT_MODULES[@]}"; exit ;;
    --fresh) shift; rm -rf "$STAGE" ;;
    --sample) N="$2"; shift 2 ;;
    *) break ;;
  esac
done
MODULES=("${@:-${DEFAULT_MODULES[@]}}")
stage "${MODULES[@]}"
if [[ -n "$N" ]]; then
  mapfile -t NAMES < <(sample "$N" "${MODULES[@]}")
  echo "mutation.sh: ${#NAMES[@]} mutants sampled (seed $SEED)"
  run_mutmut "${NAMES[@]}"
else
  run_mutmut
fi
report "${MODULES[@]}"
