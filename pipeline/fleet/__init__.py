"""Fleet operations: what runs the stages as a scheduled, sharded job graph (shards and their merge, cadence, budgets,
status and alerts, opt-outs, the local runner) and keeps the database and the site safe between runs (snapshots, retention, the soundness
check before publishing). None of it is a stage."""
