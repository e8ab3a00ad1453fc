# serve-splits.sed - the split keys of the serving samples
# (samples/llama-serve.yaml, llama-serve-tiny.yaml), which carry none: q|k|v
# and gate|up column-parallel by blocks, o and down row-parallel, the paged
# caches by key/value head. Used by t/t3810-tp-plans.sh and the tp stage
# of bench/gpu-session.sh: sed -f t/serve-splits.sed SCRIPT.
s/seed: 100}}/seed: 100}, split: {axis: 0, blocks: [H, KVW, KVW], unit: HD}}/
s/seed: 400}}/seed: 400}, split: {axis: 1, unit: HD}}/
s/seed: 500}}/seed: 500}, split: {axis: 0, blocks: [F, F]}}/
s/seed: 600}}/seed: 600}, split: {axis: 1}}/
s/^\(  [kv]_cache: .*count: L\)}/\1, split: {axis: 2, unit: HD}}/
s/^\(  qkv: .*\)}$/\1, split: {axis: 1, blocks: [H, KVW, KVW], unit: HD}}/
s/^\(  q: .*\)}$/\1, split: {axis: 1, unit: HD}}/
s/^\(  att: .*\)}$/\1, split: {axis: 1, unit: HD}}/
s/^\(  act: .*\)}$/\1, split: {axis: 1}}/
