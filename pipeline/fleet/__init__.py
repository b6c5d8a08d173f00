"""Fleet operations: what runs when, within what time, on which share of the fleet (not a stage: the CLI composes these
with the stages)."""
