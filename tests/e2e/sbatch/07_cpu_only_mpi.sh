#!/bin/bash
#SBATCH --job-name="preprocess shards"
#SBATCH --ntasks=16
#SBATCH --cpus-per-task=2
#SBATCH --mem-per-cpu=1500M
#SBATCH --time=0-02:30
#SBATCH --partition=main
#SBATCH --export=NONE

module load python/3.11
python preprocess.py
