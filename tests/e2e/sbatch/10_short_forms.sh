#!/bin/bash
#SBATCH -J quick
#SBATCH -n4
#SBATCH -c2
#SBATCH -t5
#SBATCH -pdebug
#SBATCH -o/tmp/quick-%j.out
#SBATCH -e /tmp/quick-%j.err
srun hostname
