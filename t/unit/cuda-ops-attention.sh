#!/bin/sh
# t/unit/cuda-ops, shard "attention": rope, the cache writes and attention (contiguous and paged).
shard=attention
. "$(dirname "$0")/cuda-ops-shard.sh"
