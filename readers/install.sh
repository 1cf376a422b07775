#!/bin/sh
# Install the readers of the matrix beside the project (never into its import path): the Python ones into the
# project's venv, the JavaScript ones into readers/node_modules.  Run from the repository root.
set -eu
PIP=${PIP:-.venv/bin/pip}
"$PIP" install -r readers/requirements.txt
npm install --prefix readers --ignore-scripts --no-audit --no-fund
