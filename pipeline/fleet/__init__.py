"""Fleet operations: what runs the stages as a job graph (shards and their merge, cadence, budgets, snapshots, status), not a
stage: the CLI composes these with the stages."""
