#!/bin/bash
#SBATCH -J cleanup
#SBATCH -d afterany:3,singleton
#SBATCH -n 1 -c 2
#SBATCH --mem=2048
#SBATCH -t 10:00
rm -rf "$SCRATCH/tmp-$SLURM_JOB_ID"
