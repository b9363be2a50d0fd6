#!/bin/bash
#SBATCH --gres=gpu:2 # two cards
#SBATCH --nodes=1
#SBATCH --partition=some-gpu
python -u train.py
