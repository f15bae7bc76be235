"""PR bodies, run reports and progress output."""
