#!/bin/bash
#SBATCH --job-name=test
#SBATCH --account=an_account
#SBATCH --partition=htc
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=4
#SBATCH --time=00:00:30
#SBATCH --array=0-31
#SBATCH --output=array_%A_task_%a.out
#SBATCH --error=array_%A_task_%a.err
## the command
echo "task $SLURM_ARRAY_TASK_ID"
