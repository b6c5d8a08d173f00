"""Fleet operations: what runs the stages as a scheduled, sharded job graph and keeps the database and the site safe
between runs (snapshots, retention, the soundness check before publishing). None of it is a stage."""
