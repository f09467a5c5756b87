#!/usr/bin/env bash
# Run once, before bench/gpu_check.sh, on a machine that has the data: everything the check needs
# that is not in the repository goes into .gpudata/ (git-ignored, 23 MB), so the GPU's minutes go
# to measuring.
#
#     SHARED=/work/shared/data bash bench/gpu_prepare.sh
#
# .gpudata/corpus   a copy of $SHARED/corpus (WikiText-2 valid/test + 13 Gutenberg books, 8 MB)
# .gpudata/SST-2    a copy of $SHARED/glue/SST-2 (train.tsv, dev.tsv)
# .gpudata/blimp    the first support.evaluate.PER_PARADIGM pairs of each of $SHARED/blimp's 67
#                   files (what it scores; 6 MB of the 29), when it is there
# .gpudata/vocab.txt  the 30,522-piece WordPiece vocabulary that train.py --size small trains on it
# .gpudata/cache/   that corpus tokenised with it (train.py's cache: found by content, not by path)
#
# A GPU machine without network access needs the folder carried along (or copied) beside the
# repository.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared/data}
DEST=${DEST:-.gpudata}
PYTHON=${PYTHON:-python}
for need in "$SHARED/corpus" "$SHARED/glue/SST-2/train.tsv"; do
    if [ ! -e "$need" ]; then
        echo "gpu_prepare: no $need: set SHARED to the folder holding corpus/ and glue/SST-2/" >&2
        exit 1
    fi
done
mkdir -p "$DEST"
chmod -R u+w "$DEST"
rm -rf "$DEST/corpus" "$DEST/SST-2"
cp -r "$SHARED/corpus" "$DEST/corpus"
cp -r "$SHARED/glue/SST-2" "$DEST/SST-2"
rm -rf "$DEST/blimp"
if [ -d "$SHARED/blimp" ]; then  # gpu_check.sh --run scores the run on it (its blimp step)
    # only the pairs scored: the carried folder's limit is 64 MiB, and a second corpus with its
    # cache (CORPUS=.gpudata/tapt) needs room beside these
    "$PYTHON" - "$SHARED/blimp" "$DEST/blimp" <<'EOF'
import sys
from pathlib import Path

from support.evaluate import PER_PARADIGM

source, dest = Path(sys.argv[1]), Path(sys.argv[2])
dest.mkdir()
for path in sorted(source.glob("*.jsonl")):
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    (dest / path.name).write_text("\n".join(lines[:PER_PARADIGM]) + "\n", encoding="utf-8")
EOF
fi
chmod -R u+w "$DEST"  # the shared copies are read-only; a later run replaces them
if [ ! -f "$DEST/vocab.txt" ]; then
    # One CPU update of a small batch: the vocabulary and the tokenised corpus are what it leaves.
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    "$PYTHON" train.py --size small --data "$DEST/corpus" --cache-dir "$DEST/cache" \
        --out "$work/run" --steps 1 --batch-size 8 --device cpu
    cp "$work/run/vocab.txt" "$DEST/vocab.txt"
fi
du -sh "$DEST"
echo "gpu_prepare: $DEST is ready; carry it along: run(..., carry=[\"$DEST\"])"
