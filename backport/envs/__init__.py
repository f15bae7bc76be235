"""Branch environments: probe, pin checks, test runs, summary parsing, set-up."""
