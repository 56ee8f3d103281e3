#!/bin/bash
# Hyper-parameter sweep: 100 learning rates, at most 8 at a time.
#SBATCH --job-name=lr-sweep
#SBATCH --array=0-99%8
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=4
#SBATCH --mem-per-cpu=4G
#SBATCH --time=90
#SBATCH --output=sweep/%A_%a.out

LR=$(python -c "print(10 ** (-5 + $SLURM_ARRAY_TASK_ID / 25))")
python train.py --lr "$LR"
