"""Slurm job scripts as gq jobs: the `#SBATCH` block read as sbatch reads it (`block`), each
option's verdict (`options`: mapped, warned or refused), sbatch's time and size forms (`forms`),
`-o/-e` file names (`patterns`) and the `[slurm_compat]` settings (`compat`). Pure, standard
library only: `gq submit` runs it on its light path and the daemon expands the file names."""
