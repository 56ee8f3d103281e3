#!/bin/bash
#SBATCH --job-name=infer
#SBATCH --ntasks=4
#SBATCH --gpus-per-task=a100:1
#SBATCH --cpus-per-task=6
#SBATCH --mem=128G
#SBATCH --time=1-0:0:0
#SBATCH --output=%x_%j_%t.out   # one file per task

python serve.py
