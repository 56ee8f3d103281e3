#!/bin/sh
#SBATCH --array=1,3,5-9:2
#SBATCH -n 1
#SBATCH -t 30:00
#SBATCH -A Research
#SBATCH -o shard-%a.txt
./process_shard "$SLURM_ARRAY_TASK_ID"
