#!/bin/bash
#SBATCH --job-name=nightly
#SBATCH --mail-type=END,FAIL
#SBATCH --mail-user=ml-team@example.org
#SBATCH --gres=gpu:a100:2
#SBATCH -t 12:00:00
#SBATCH --requeue

./nightly_build_and_test.sh
