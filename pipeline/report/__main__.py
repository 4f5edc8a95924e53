"""`python -m pipeline.report ...` is the `gpfit-report` command."""
from pipeline.report.cli import main

if __name__ == "__main__":
    main()
