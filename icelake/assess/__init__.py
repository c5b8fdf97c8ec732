"""Assessment of an estate before it is moved: sizes, blockers, and time and cost estimates."""
