#!/bin/sh
# t/unit/cuda-ops, shard "products": the elementwise kinds and the products.
shard=products
. "$(dirname "$0")/cuda-ops-shard.sh"
