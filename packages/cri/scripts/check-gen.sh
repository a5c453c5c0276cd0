#!/usr/bin/env bash
# Fails when the checked-in src/gen differs from what scripts/gen.sh produces from the .proto.
# CI runs it; fix a failure with `npm run proto:gen` at the repo root and commit the result.
set -euo pipefail

pkg_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

bash "$pkg_dir/scripts/gen.sh" "$tmp"

if ! diff -r "$pkg_dir/src/gen" "$tmp/src/gen" >"$tmp/diff.txt"; then
  head -n 60 "$tmp/diff.txt" >&2
  echo >&2
  echo "generated CRI code is stale; run npm run proto:gen (packages/cri/src/gen differs from proto/runtime/v1/api.proto)" >&2
  exit 1
fi
echo "generated CRI code is up to date"
