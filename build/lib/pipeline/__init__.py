"""MCP Scoreboard: discover, examine, score and publish MCP servers."""

# Bumped whenever a change to the pipeline can change stored evidence or scores.
ENGINE_VERSION = "0.1.0"
