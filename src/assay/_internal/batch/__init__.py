"""`assay grade-many`: jobs, the resumable journal and the bounded parallel run."""
