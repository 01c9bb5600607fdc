"""The folder put first on a Python program's path under libfaketime (sitecustomize.py)."""
