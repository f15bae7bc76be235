"""`python -m backport` entry point."""

from backport.cli import main

if __name__ == "__main__":
    main()
