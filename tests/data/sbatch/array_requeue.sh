#!/bin/bash

#SBATCH --job-name=task_array
#SBATCH --account=an_account
#SBATCH --qos=a_qos
#SBATCH --ntasks=1
#SBATCH --mem=512M
#SBATCH --array=0-4
#SBATCH --time=00:03:00
#SBATCH --output=./output/%x_%A_%a.out
#SBATCH --error=./output/%x_%A_%a.err
#SBATCH --requeue

python job_array.py $SLURM_ARRAY_TASK_ID
