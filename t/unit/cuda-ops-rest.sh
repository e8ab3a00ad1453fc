#!/bin/sh
# t/unit/cuda-ops, shard "rest": mixture-of-experts, decoder_layer, PDL, init and the errors.
shard=rest
. "$(dirname "$0")/cuda-ops-shard.sh"
