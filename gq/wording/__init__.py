"""The words gq shows for jobs, shared by the CLI and `gq top` (which may not import each other):
`jobs` (a job's row in a table), `arrays` (arrays folded into one row, answers to cancel/hold/
release folded per array, `gq wait`'s summary). Standard library only."""
