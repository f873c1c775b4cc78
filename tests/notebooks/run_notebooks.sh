#!/usr/bin/env bash
# Executes notebooks/run.ipynb and notebooks/plan.ipynb against the bundled
# examples (notebooks/examples/run and notebooks/examples/plan), writing the
# executed copies to a temporary folder: the repository's notebooks are never
# modified. Fails (never skips) when Jupyter or a Python package is missing,
# saying what to install.
#
# Usage: tests/notebooks/run_notebooks.sh SOURCE_DIR
# Environment: FLEETSIM_NOTEBOOK_PYTHON (default /usr/bin/python3),
#   FLEETSIM_NOTEBOOK_JUPYTER (default /usr/bin/jupyter),
#   FLEETSIM_NOTEBOOK_KEEP=DIR to keep the executed notebooks in DIR.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 SOURCE_DIR" >&2
  exit 2
fi
SRC=$(cd "$1" && pwd)
NB_DIR="$SRC/notebooks"
PY=${FLEETSIM_NOTEBOOK_PYTHON:-/usr/bin/python3}
JUPYTER=${FLEETSIM_NOTEBOOK_JUPYTER:-/usr/bin/jupyter}
INSTALL_HINT="install them with: apt-get install python3-notebook python3-nbconvert jupyter-nbconvert python3-pandas python3-matplotlib
  (or in a virtual environment: pip install notebook nbconvert ipykernel pandas matplotlib, then set
  FLEETSIM_NOTEBOOK_PYTHON and FLEETSIM_NOTEBOOK_JUPYTER to its python and jupyter)"

fail() {
  echo "run_notebooks: FAILED: $*" >&2
  exit 1
}

[[ -x "$PY" ]] || fail "no Python interpreter at $PY; $INSTALL_HINT"
missing=$("$PY" - <<'EOF'
import importlib
missing = []
for module in ("numpy", "pandas", "matplotlib", "nbconvert", "nbformat", "nbclient", "ipykernel", "IPython"):
    try:
        importlib.import_module(module)
    except Exception:
        missing.append(module)
print(" ".join(missing))
EOF
) || fail "$PY could not check its packages"
[[ -z "$missing" ]] || fail "$PY lacks the Python packages: $missing; $INSTALL_HINT"

# `jupyter nbconvert` is Debian's jupyter-nbconvert package; `python3 -m
# nbconvert` is the same program from python3-nbconvert, used when only that
# is installed.
if [[ -x "$JUPYTER" ]] && "$JUPYTER" nbconvert --version >/dev/null 2>&1; then
  NBCONVERT=("$JUPYTER" nbconvert)
elif "$PY" -m nbconvert --version >/dev/null 2>&1; then
  echo "run_notebooks: note: '$JUPYTER nbconvert' is not available (Debian package jupyter-nbconvert);" \
       "using '$PY -m nbconvert'"
  NBCONVERT=("$PY" -m nbconvert)
else
  fail "neither '$JUPYTER nbconvert' nor '$PY -m nbconvert' runs; $INSTALL_HINT"
fi

# The notebooks run in a kernel; make sure the "python3" kernel is the
# interpreter that has the packages.
kernel_python=$("$PY" -c 'from jupyter_client.kernelspec import KernelSpecManager as K; print(K().get_kernel_spec("python3").argv[0])' 2>/dev/null) \
  || fail "no python3 Jupyter kernel is installed; $INSTALL_HINT (ipykernel provides it)"
if [[ "$kernel_python" != "$PY" ]]; then
  "$kernel_python" -c 'import pandas, matplotlib, numpy, ipykernel' 2>/dev/null \
    || fail "the python3 Jupyter kernel runs '$kernel_python', which lacks pandas, matplotlib, numpy or ipykernel; $INSTALL_HINT"
fi

for f in run.ipynb plan.ipynb examples/run/summary.json examples/plan/plan.json; do
  [[ -e "$NB_DIR/$f" ]] || fail "$NB_DIR/$f is missing"
done

OUT=$(mktemp -d "${TMPDIR:-/tmp}/fleetsim-notebooks.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
# The notebooks are copied so that nothing (not even a checkpoint) is written
# next to the repository's; examples/ stays where it is and is read in place.
cp "$NB_DIR/run.ipynb" "$NB_DIR/plan.ipynb" "$OUT/"
mkdir -p "$OUT/executed"

export MPLBACKEND=Agg
export FLEETSIM_RUN_DIR="$NB_DIR/examples/run"
export FLEETSIM_PLAN_DIR="$NB_DIR/examples/plan"
unset FLEETSIM_RUN FLEETSIM_WARMUP_S
export PYDEVD_DISABLE_FILE_VALIDATION=1  # quiets ipykernel's debugger warning

status=0
for nb in run plan; do
  echo "run_notebooks: executing notebooks/$nb.ipynb"
  if ! (cd "$OUT" && "${NBCONVERT[@]}" --to notebook --execute --ExecutePreprocessor.timeout=300 \
          --output-dir "$OUT/executed" "$OUT/$nb.ipynb"); then
    echo "run_notebooks: notebooks/$nb.ipynb FAILED" >&2
    status=1
  fi
done

if [[ -n "${FLEETSIM_NOTEBOOK_KEEP:-}" ]]; then
  mkdir -p "$FLEETSIM_NOTEBOOK_KEEP"
  cp "$OUT"/executed/*.ipynb "$FLEETSIM_NOTEBOOK_KEEP"/ 2>/dev/null || true
  echo "run_notebooks: executed notebooks in $FLEETSIM_NOTEBOOK_KEEP"
fi
[[ $status -eq 0 ]] || fail "a notebook did not execute (see above)"

# The repository's notebooks must be stored without outputs.
"$PY" - "$NB_DIR/run.ipynb" "$NB_DIR/plan.ipynb" <<'EOF' || fail "store the notebooks without outputs: $JUPYTER nbconvert --clear-output --inplace notebooks/*.ipynb"
import json, sys
bad = []
for path in sys.argv[1:]:
    nb = json.load(open(path))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and (cell.get("outputs") or cell.get("execution_count") is not None):
            bad.append(path)
            break
for path in bad:
    print(f"run_notebooks: {path} has outputs", file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
echo "run_notebooks: both notebooks executed"
