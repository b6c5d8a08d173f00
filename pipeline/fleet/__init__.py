"""Fleet operations: what runs the scoreboard as a fleet of scheduled jobs (not a stage): status and alerts, opt-outs, ..."""
