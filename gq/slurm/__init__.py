"""A Slurm cluster as a gq peer (docs/slurm.md): jobs sent with `--host NAME` go to sbatch."""
