"""What a task and a verdict are, and the strict JSON reader both rely on. Imports nothing else
from assay._internal."""
