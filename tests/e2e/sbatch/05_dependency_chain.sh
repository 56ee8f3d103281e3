#!/bin/bash
#SBATCH --job-name=evaluate
#SBATCH --dependency=afterok:1:2
#SBATCH --gpus=2
#SBATCH --ntasks=2
#SBATCH --time=1-06
#SBATCH --chdir=/tmp

python evaluate.py --checkpoint best.pt
