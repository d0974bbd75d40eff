"""The HTML report and JUnit export of a grade-many output directory (`assay report`), and
the page the proof matrix is drawn on (`assay matrix --html`)."""
