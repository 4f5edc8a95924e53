"""gpfit's on-disk contract, shared by the Beam job and the report.

What the files look like and how they are found, checked and read: input
discovery and checks (inputs), column conversion (columns), the output
schema (schema), the output folder's rules (outputs), the manifest
(manifest), the errors that refuse a run (errors), and opening and reading
many files at once (files). Nothing here builds a
Beam pipeline or loads TensorFlow; files are reached through Beam's
FileSystems, so that local paths and gs:// work alike.
"""
