#!/bin/sh
# t/unit/cuda-ops, shard "norms": the norm folds, the rows kernel and argmax.
shard=norms
. "$(dirname "$0")/cuda-ops-shard.sh"
