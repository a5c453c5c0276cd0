#!/usr/bin/env bash
# Regenerates the TypeScript for proto/runtime/v1/api.proto into src/gen with ts-proto, through
# buf (both from node_modules: works offline). Options live in buf.gen.yaml.
#
#   scripts/gen.sh            regenerate into src/gen (what `npm run gen` / `npm run proto:gen` run)
#   scripts/gen.sh <dir>      generate into <dir>/src/gen instead (check-gen.sh uses this)
#
# Deterministic: the output depends only on the .proto, buf.gen.yaml and the pinned ts-proto.
set -euo pipefail

pkg_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo_dir="$(cd "$pkg_dir/../.." && pwd)"
cd "$pkg_dir"

# The workspace's and the repo root's node_modules/.bin give buf and protoc-gen-ts_proto.
export PATH="$pkg_dir/node_modules/.bin:$repo_dir/node_modules/.bin:$PATH"
for tool in buf protoc-gen-ts_proto; do
  command -v "$tool" >/dev/null || {
    echo "gen.sh: '$tool' not found in node_modules/.bin; run npm install at the repo root" >&2
    exit 1
  }
done

out_args=()
if [[ $# -ge 1 ]]; then
  mkdir -p "$1"
  out_args=(--output "$(cd "$1" && pwd)")
fi

buf generate --template buf.gen.yaml "${out_args[@]}"
