"""The pages people read: assessment.html and report.html, their sections and shared HTML."""
