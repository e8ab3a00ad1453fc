# t/unit/cuda-ops-shard.sh - sourced by t/unit/cuda-ops-SHARD.sh, with
# $shard set: run t/unit/cuda-ops as that shard (BCG_TEST_SHARD; the groups
# of each are GROUP's first argument in t/unit/cuda-ops.c), its TAP passed
# through. make check runs the four side by side, where one process took
# the whole suite's time on a GPU. BCG_TEST_ONLY still narrows a shard.
BCG_TEST_SHARD=$shard
export BCG_TEST_SHARD
exec "${BCG_BUILD_DIR:-.}/t/unit/cuda-ops"
