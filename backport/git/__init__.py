"""Git engine: repository cache, worktrees, patch application, push. Knows nothing of forges."""
