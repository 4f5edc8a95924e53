"""`python -m pipeline ...` is the `gpfit` command."""
from pipeline.cli import main

if __name__ == "__main__":
    main()
