#!/usr/bin/env bash
# The test command: vitest's normal output, then a one-line summary from its JSON report.
set -uo pipefail
report="$(mktemp -t dsh-acp-vitest-XXXXXX.json)"
npx vitest run --reporter=default --reporter=json --outputFile.json="$report" "$@"
status=$?
node scripts/test-summary.mjs "$report" || status=1
rm -f "$report"
exit $status
