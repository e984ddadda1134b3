#!/usr/bin/env bash
# Idempotent set-up of LibreCube cfdp 0.2.0 for suts/cfdp/librecube/harness.py:
# creates suts/cfdp/librecube/.venv with python3.11 and installs the pinned
# requirements.txt into it. Safe to run again: it only acts on what is missing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
req="$here/requirements.txt"
python="${LIBRECUBE_PYTHON:-python3.11}"

if [ -x "$venv/bin/python" ]; then
  echo "librecube: venv exists: $venv"
else
  command -v "$python" >/dev/null 2>&1 || {
    echo "librecube: $python not found (set LIBRECUBE_PYTHON to a Python 3.11)" >&2
    exit 1
  }
  echo "librecube: creating venv $venv with $python"
  "$python" -m venv "$venv"
fi

if "$venv/bin/python" - "$req" <<'PY'
import sys
from importlib.metadata import PackageNotFoundError, version

ok = True
for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    name, _, want = line.partition("==")
    try:
        have = version(name)
    except PackageNotFoundError:
        have = None
    if have != want:
        ok = False
sys.exit(0 if ok else 1)
PY
then
  echo "librecube: pinned requirements already installed: $(grep -v '^#' "$req" | paste -sd' ')"
else
  echo "librecube: installing $req"
  "$venv/bin/pip" install --disable-pip-version-check -q -r "$req"
  echo "librecube: installed: $("$venv/bin/pip" freeze --disable-pip-version-check | paste -sd' ')"
fi
