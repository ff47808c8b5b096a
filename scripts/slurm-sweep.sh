#!/usr/bin/env bash
# Runs a dae-sim sweep on a SLURM cluster: one job-array task per shard, then a merge job that
# starts when every shard has finished. Each shard writes its own directory; the merge joins them.
#
#   scripts/slurm-sweep.sh CONFIG SHARDS OUT [extra sbatch options...]
#   scripts/slurm-sweep.sh configs/sweep-mlp.toml 8 results/sweep-mlp --partition=cpu --time=01:00:00
#
# The dae-sim binary must be built (cargo build --release) on a filesystem the nodes share.
set -euo pipefail
if [[ $# -lt 3 ]]; then
    echo "usage: $0 CONFIG SHARDS OUT [sbatch options...]" >&2
    exit 2
fi
config=$1 shards=$2 out=$3
shift 3
if ! [[ $shards =~ ^[1-9][0-9]*$ ]]; then
    echo "$0: SHARDS must be a positive integer, not '$shards'" >&2
    exit 2
fi
bin=$(cd "$(dirname "$0")/.." && pwd)/target/release/dae-sim
if [[ ! -x $bin ]]; then
    echo "$0: $bin not found: run cargo build --release first" >&2
    exit 2
fi
mkdir -p "$out/logs"
# Each array task runs its shard on every core SLURM gives it, resuming if it was requeued.
array=$(sbatch --parsable --array=0-$((shards - 1)) --job-name=dae-sim-sweep \
    --output="$out/logs/shard-%a.log" "$@" \
    --wrap="$bin sweep --config $config --shard \$SLURM_ARRAY_TASK_ID/$shards --resume \
            --threads \${SLURM_CPUS_PER_TASK:-1} --quiet --out $out/shard-\$SLURM_ARRAY_TASK_ID")
dirs=$(for ((i = 0; i < shards; i++)); do printf '%s ' "$out/shard-$i"; done)
# afterany: a shard with a failed pair exits 1 but keeps every point's results, which the merge
# still combines (and says which points are missing if a shard died).
merge=$(sbatch --parsable --dependency=afterany:"$array" --job-name=dae-sim-merge \
    --output="$out/logs/merge.log" "$@" --wrap="$bin merge $dirs --out $out/merged")
echo "submitted shards as job array $array and the merge as job $merge; results: $out/merged"
