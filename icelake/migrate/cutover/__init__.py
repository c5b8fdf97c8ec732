"""After promotion: stranded commits and their carry-over."""
