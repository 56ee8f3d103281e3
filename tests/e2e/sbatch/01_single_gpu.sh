#!/bin/bash
#SBATCH --job-name=finetune-bert
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=32G
#SBATCH --time=04:00:00
#SBATCH --output=logs/%x-%j.out

set -euo pipefail
python finetune.py --model bert-base --epochs 3
