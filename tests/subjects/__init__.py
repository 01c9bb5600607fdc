"""Recipes used as test subjects by the end-to-end tests (imported as `--recipe
subjects.<module>:<Name>`, mounted into the client containers like any user recipe)."""
