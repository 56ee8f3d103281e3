#!/bin/bash

# ---------------------------------------------------------------
# Training job for the vision team.  Edit the variables below.
# ---------------------------------------------------------------
#SBATCH --job-name=vit-large
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=8
#SBATCH --gres=gpu:8
#SBATCH --mem=0G
#SBATCH --time=3-00
    # indented comment lines do not end the directives
#SBATCH --output=vit-%j.out

DATA=/datasets/imagenet
torchrun --nproc_per_node=8 train_vit.py --data "$DATA"
#SBATCH --job-name=never-read
