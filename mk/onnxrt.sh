#!/bin/sh
# mk/onnxrt.sh DIR: ONNX Runtime for the ONNX export tests and benchmark
# (npm onnxruntime-node, pinned by tests/onnx/package-lock.json) into
# DIR/node_modules, with `npm ci --ignore-scripts` (the package carries
# libonnxruntime.so for linux x64 and arm64; its install script only fetches
# GPU extras). Called by `make deps`. Never fails the build: where npm or the
# registry cannot be reached it says so, and the tests that need it skip
# with that reason (DIR/.unavailable).
set -u
dir=$1
src=tests/onnx
if [ -f "$dir/.ok" ] && cmp -s "$src/package-lock.json" "$dir/package-lock.json"; then
    echo "deps: onnxruntime-node is installed in $dir"
    exit 0
fi
mkdir -p "$dir" && rm -f "$dir/.ok" "$dir/.unavailable"
why=''
if ! command -v npm >/dev/null 2>&1; then
    why='npm is not installed (Debian package nodejs, or npm)'
else
    cp "$src/package.json" "$src/package-lock.json" "$dir/" &&
        (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund >npm.log 2>&1) ||
        why="npm ci failed (registry unreachable?): $(tail -n 2 "$dir/npm.log" 2>/dev/null | tr '\n' ' ')"
fi
if [ -n "$why" ]; then
    echo "$why" >"$dir/.unavailable"
    echo "deps: warning: onnxruntime-node not installed: $why (the ONNX Runtime tests will skip)"
    exit 0
fi
touch "$dir/.ok"
echo "deps: onnxruntime-node installed in $dir"
