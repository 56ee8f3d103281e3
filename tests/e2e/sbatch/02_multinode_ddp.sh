#!/bin/bash
#SBATCH -J llama-ddp
#SBATCH -N 2
#SBATCH --ntasks-per-node=4
#SBATCH --gpus-per-node=a100:4
#SBATCH -c 12
#SBATCH --mem=480G
#SBATCH -t 2-00:00:00
#SBATCH -p gpu
#SBATCH -o ddp-%j.log
#SBATCH -e ddp-%j.err

export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_PORT=29500
python train.py --rank "$SLURM_PROCID" --world "$SLURM_NTASKS"
