"""Layer 11: the command line -- ``main`` builds the parser and runs a sub-command; each other module holds one
command's argument parser and glue."""
