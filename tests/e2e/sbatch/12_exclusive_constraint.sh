#!/bin/bash
#SBATCH --job-name=bench-nccl
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --exclusive
#SBATCH --constraint=a100
#SBATCH --time=00:20:00
#SBATCH --output=nccl-%N-%j.out

./all_reduce_perf -b 8 -e 8G -f 2 -g 8
